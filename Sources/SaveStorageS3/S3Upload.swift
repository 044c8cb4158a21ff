import Foundation
import SaveKit
import SaveStorage

extension S3Storage {
    /// An object streamed into the store as it is written: bytes fill a part in memory; a full
    /// part goes up on a thread of its own while the next one fills, so making the bundle and
    /// sending it overlap, and at most two parts are held. An object that ends within its first
    /// part is one PUT; a longer one is a multipart upload.
    final class Upload: StorageUpload, @unchecked Sendable {
        private let storage: S3Storage
        private let name: String
        private let ifAbsent: Bool
        private var filling = Data()
        private var uploadID: String?
        private var partsSent = 0
        private var finished = false

        /// Guards what the part thread touches: the ETags, its failure, and whether it is busy.
        private let condition = NSCondition()
        private var etags: [Int: String] = [:]
        private var failure: (any Error)?
        private var sending = false

        init(storage: S3Storage, name: String, ifAbsent: Bool) {
            (self.storage, self.name, self.ifAbsent) = (storage, name, ifAbsent)
            filling.reserveCapacity(storage.partSize)
        }

        deinit { abort() }

        private var key: String { storage.place.key(name) }

        /// S3 takes at most 10,000 parts: the first 8,000 are of ``S3Storage/partSize`` (5 MiB:
        /// 42 GB at flat memory, far past any save folder), the next 1,000 ten times that and the
        /// last 1,000 a hundred times (past 600 GB in all, with memory growing only there).
        private func size(ofPart number: Int) -> Int { storage.partSize * (number <= 8_000 ? 1 : number <= 9_000 ? 10 : 100) }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            guard !finished else { throw SaveError(.io, file: storage.location + "/" + name, "the upload was given up") }
            var rest = bytes[...]
            while !rest.isEmpty {
                let room = size(ofPart: partsSent + 1) - filling.count
                let taken = rest.prefix(room)
                filling.append(contentsOf: UnsafeRawBufferPointer(rebasing: taken))
                rest = rest.dropFirst(taken.count)
                if filling.count == size(ofPart: partsSent + 1) { try sendFilledPart() }
            }
        }

        func finish() throws {
            guard !finished else { throw SaveError(.io, file: storage.location + "/" + name, "the upload was given up") }
            do {
                try waitForPart()
                if uploadID == nil {
                    let response = try storage.client.send("PUT", key: key, headers: ifAbsentHeaders(), body: filling)
                    guard response.status == 200 else { throw storage.client.failure(response, key: key) }
                } else {
                    if !filling.isEmpty { try sendFilledPart() }
                    try waitForPart()
                    if ifAbsent { try storage.refuseExisting(name) }
                    let parts = (1...partsSent).map { "<Part><PartNumber>\($0)</PartNumber><ETag>\(etags[$0]!)</ETag></Part>" }.joined()
                    let body = Data("<CompleteMultipartUpload>\(parts)</CompleteMultipartUpload>".utf8)
                    let completed = try storage.client.send("POST", key: key, query: [("uploadId", uploadID!)], headers: ifAbsentHeaders(), body: body)
                    // S3 can answer 200 with an error document when completing fails late.
                    guard completed.status == 200, S3Client.errorCode(completed.body) == nil else { throw storage.client.failure(completed, key: key) }
                    uploadID = nil  // complete: nothing to abort
                }
            } catch {
                abort()
                throw error
            }
            finished = true
            filling = Data()
        }

        func abort() {
            guard !finished else { return }
            finished = true
            condition.lock()
            while sending { condition.wait() }
            condition.unlock()
            filling = Data()
            if let uploadID { _ = try? storage.client.send("DELETE", key: key, query: [("uploadId", uploadID)]) }
            uploadID = nil
        }

        private func ifAbsentHeaders() -> [(String, String)] { ifAbsent ? [("If-None-Match", "*")] : [] }

        /// Waits for the part in flight; throws what made it fail.
        private func waitForPart() throws {
            condition.lock()
            defer { condition.unlock() }
            while sending { condition.wait() }
            if let failure { throw failure }
        }

        /// Hands the filled part to a thread of its own, once the one before it is up.
        private func sendFilledPart() throws {
            try waitForPart()
            if uploadID == nil {
                if ifAbsent { try storage.refuseExisting(name) }
                let created = try storage.client.send("POST", key: key, query: [("uploads", "")])
                guard created.status == 200, let id = S3Client.firstElement("UploadId", in: created.body) else { throw storage.client.failure(created, key: key) }
                uploadID = id
            }
            partsSent += 1
            let (number, body, id, key, client) = (partsSent, filling, uploadID!, key, storage.client)
            filling = Data()
            filling.reserveCapacity(size(ofPart: partsSent + 1))
            condition.lock()
            sending = true
            condition.unlock()
            Thread.detachNewThread { [self] in
                var result: Result<String, any Error>
                do {
                    let response = try client.send("PUT", key: key, query: [("partNumber", String(number)), ("uploadId", id)], body: body)
                    if response.status == 200, let etag = response.header("ETag") { result = .success(etag) } else { result = .failure(client.failure(response, key: key)) }
                } catch { result = .failure(error) }
                condition.lock()
                switch result {
                case .success(let etag): etags[number] = etag
                case .failure(let error): failure = error
                }
                sending = false
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
