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
        private var multipart: S3Multipart?
        private var partsSent = 0
        private var finished = false

        /// Guards what the part thread touches: the ETags, the first failure, and whether it is busy.
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
            do {
                while !rest.isEmpty {
                    let room = size(ofPart: partsSent + 1) - filling.count
                    let taken = rest.prefix(room)
                    filling.append(contentsOf: UnsafeRawBufferPointer(rebasing: taken))
                    rest = rest.dropFirst(taken.count)
                    if filling.count == size(ofPart: partsSent + 1) { try sendFilledPart() }
                }
            } catch {
                // Bytes were lost: finishing must not make an object of what is left.
                condition.lock()
                if failure == nil { failure = error }
                condition.unlock()
                throw error
            }
        }

        func finish() throws {
            guard !finished else { throw SaveError(.io, file: storage.location + "/" + name, "the upload was given up") }
            do {
                try waitForPart()
                if let multipart {
                    if !filling.isEmpty { try sendFilledPart() }
                    try waitForPart()
                    if ifAbsent { try storage.refuseExisting(name) }
                    try multipart.complete((1...partsSent).map { etags[$0]! }, headers: ifAbsentHeaders())
                    self.multipart = nil  // complete: nothing to abort
                } else {
                    let response = try storage.client.send("PUT", key: key, headers: ifAbsentHeaders(), body: filling)
                    guard response.status == 200 else { throw storage.client.failure(response, key: key) }
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
            multipart?.abort()
            multipart = nil
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
            if multipart == nil {
                if ifAbsent { try storage.refuseExisting(name) }
                multipart = try S3Multipart.start(storage.client, key: key)
            }
            partsSent += 1
            let (number, body, multipart) = (partsSent, filling, multipart!)
            filling = Data()
            filling.reserveCapacity(size(ofPart: partsSent + 1))
            condition.lock()
            sending = true
            condition.unlock()
            Thread.detachNewThread { [self] in
                let result = Result { try multipart.put(number, body: body) }
                condition.lock()
                switch result {
                case .success(let etag): etags[number] = etag
                case .failure(let error): if failure == nil { failure = error }
                }
                sending = false
                condition.broadcast()
                condition.unlock()
            }
        }
    }
}
