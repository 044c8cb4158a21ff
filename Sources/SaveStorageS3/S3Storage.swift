import Crypto
import Foundation
import SaveKit
import SaveStorage
#if canImport(Glibc)
import Glibc
#endif

/// A ``SaveStorage`` in a bucket and prefix of an S3-compatible object store.
///
/// Objects go up as they are made and come down in parts of ``partSize`` (memory holds a
/// couple of parts, whatever the object's size); an object of more than one part is a multipart
/// upload, completed with `If-None-Match: *` when it must be new and aborted when anything
/// fails, so that a cut transfer leaves no object behind (and one left by a killed run is
/// removed by ``removeAbandonedUploads(olderThan:of:)``).
public struct S3Storage: SaveStorage {
    public let client: S3Client
    public private(set) var place: S3Location
    /// S3's smallest part (but the last): an upload holds two parts, the one filling and the
    /// one going up (sent by libcurl straight from its bytes), so smaller is flatter.
    public var partSize = 5 << 20
    /// The largest object one CopyObject copies (S3's limit, 5 GB); larger ones are copied in
    /// parts of ``copyPartSize``, on the server.
    public var largestCopy: Int64 = 5_000_000_000
    public var copyPartSize: Int64 = 1 << 30
    /// Keys removed by one DeleteObjects request (S3's limit, 1,000).
    public var deleteBatch = 1000

    /// `forOneRun`: the store of one command's run, which gives up on a store that went silent
    /// for the rest of the run (``S3Client/givesUpOnSilence``); a server, which lives on, keeps
    /// trying each request.
    public init(_ place: S3Location, environment: AWSEnvironment, forOneRun: Bool = false) {
        self.place = place
        client = S3Client(environment: environment, bucket: place.bucket, givesUpOnSilence: forOneRun)
    }

    public var location: String { place.description }

    public func child(_ folder: String) throws -> any SaveStorage {
        guard !folder.isEmpty, !folder.contains("/"), folder != ".", folder != ".." else {
            throw SaveError(.usage, file: location, "the folder name \"\(folder)\", expected a name without /")
        }
        var child = self
        child.place.prefix = place.key(folder)
        return child
    }

    public func list() throws -> [StoredObject] { try list(prefix: "") }

    public func list(prefix namePrefix: String) throws -> [StoredObject] {
        var objects: [StoredObject] = []
        var token: String?
        let prefix = place.prefix.isEmpty ? "" : place.prefix + "/"
        // Only this folder's keys: the whole prefix, and `/` as delimiter so that deeper keys
        // (other slots, other backups) come back folded into common prefixes, not one by one.
        let asked = prefix + namePrefix
        repeat {
            var query = [("list-type", "2"), ("delimiter", "/")]
            if !asked.isEmpty { query.append(("prefix", asked)) }
            if let token { query.append(("continuation-token", token)) }
            let response = try client.send("GET", query: query)
            guard response.status == 200 else { throw client.failure(response, key: nil) }
            for contents in S3Client.elements("Contents", in: response.body, raw: true) {
                let body = Data(contents.utf8)
                guard let key = S3Client.firstElement("Key", in: body), key.hasPrefix(prefix) else { continue }
                let name = String(key.dropFirst(prefix.count))
                // Deeper keys belong to other prefixes.
                guard !name.isEmpty, !name.contains("/"), name.hasPrefix(namePrefix) else { continue }
                let size = Int64(S3Client.firstElement("Size", in: body) ?? "") ?? 0
                let modified = S3Client.firstElement("LastModified", in: body).flatMap(RFC3339.parse)
                objects.append(StoredObject(name: name, size: size, modified: modified))
            }
            token = S3Client.firstElement("IsTruncated", in: response.body) == "true" ? S3Client.firstElement("NextContinuationToken", in: response.body) : nil
        } while token != nil
        return objects.sorted { $0.name < $1.name }
    }

    public func read(_ name: String) throws -> [UInt8] {
        let key = place.key(name)
        let response = try client.send("GET", key: key)
        guard response.status == 200 else { throw client.failure(response, key: key) }
        return Array(response.body)
    }

    public func write(_ bytes: [UInt8], to name: String, ifAbsent: Bool) throws {
        let key = place.key(name)
        let response = try client.send("PUT", key: key, headers: ifAbsent ? [("If-None-Match", "*")] : [], body: Data(bytes))
        guard response.status == 200 else {
            let failure = client.failure(response, key: key)
            // The client tries again when no answer came: the first try may have gone through.
            if failure.category == .conflict, (try? read(name)) == bytes { return }
            throw failure
        }
    }

    public func startUpload(to name: String, ifAbsent: Bool) throws -> any StorageUpload {
        Upload(storage: self, name: name, ifAbsent: ifAbsent)
    }

    /// Not every S3-compatible server honours `If-None-Match` when a multipart upload completes
    /// (moto does not): an existing object is looked for before the upload starts, and again
    /// before it completes. Where two writers could still race, the repository's marker — one
    /// PUT, which every server checks — decides which backup counts.
    func refuseExisting(_ name: String) throws {
        let key = place.key(name)
        let head = try client.send("HEAD", key: key)
        if head.status == 200 { throw SaveError(.conflict, file: location + "/" + name, "exists already, expected a new object") }
        guard head.status == 404 else { throw client.failure(head, key: key) }
    }

    public func download(_ name: String, to file: String) throws {
        let key = place.key(name)
        let head = try client.send("HEAD", key: key)
        guard head.status == 200 else { throw client.failure(head, key: key) }
        let size = Int(head.header("Content-Length") ?? "") ?? 0
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SaveError(.cannotCreate, file: file, FileError.reason(errno)) }
        defer { close(descriptor) }
        var offset = 0
        while offset < size {
            let last = min(offset + partSize, size) - 1
            let response = try client.send("GET", key: key, headers: [("Range", "bytes=\(offset)-\(last)")])
            guard response.status == 206 || response.status == 200 else { throw client.failure(response, key: key) }
            // A server that ignores Range sends the whole object: taken whole, once.
            let expected = response.status == 200 && offset == 0 ? size : last - offset + 1
            guard response.status == 206 || offset == 0 else { throw SaveError(.io, file: location + "/" + name, "the server ignored a range request part way") }
            let piece = response.body[...]
            guard piece.count == expected else { throw SaveError(.io, file: location + "/" + name, "a part came back with \(piece.count) bytes, expected \(expected)") }
            let failure = Data(piece).withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
            guard failure == 0 else { throw SaveError(.io, file: file, FileError.reason(failure)) }
            offset += expected
        }
    }

    public func copy(_ name: String, to target: String) throws {
        let key = place.key(target)
        let source = SigV4.encodePath("/" + place.bucket + "/" + place.key(name))
        let head = try client.send("HEAD", key: place.key(name))
        guard head.status == 200 else { throw client.failure(head, key: place.key(name)) }
        let size = Int64(head.header("Content-Length") ?? "") ?? 0
        guard size > largestCopy else {
            let response = try client.send("PUT", key: key, headers: [("x-amz-copy-source", source)])
            // A copy can fail after its 200 has begun: the error is then in the body.
            guard response.status == 200, S3Client.errorCode(response.body) == nil else { throw client.failure(response, key: key) }
            return
        }
        // One CopyObject takes at most 5 GB: a larger object is copied as a multipart upload
        // whose parts are ranges of the source, copied on the server (UploadPartCopy).
        let multipart = try S3Multipart.start(client, key: key)
        do {
            var etags: [String] = []
            var offset: Int64 = 0
            while offset < size {
                let last = min(offset + copyPartSize, size) - 1
                etags.append(try multipart.copy(etags.count + 1, from: source, range: offset...last))
                offset = last + 1
            }
            try multipart.complete(etags)
        } catch {
            multipart.abort()
            throw error
        }
    }

    public func removeAbandonedUploads(olderThan age: TimeInterval, of belongs: (String) -> Bool) throws -> [String] {
        let prefix = place.prefix.isEmpty ? "" : place.prefix + "/"
        let response = try client.send("GET", query: [("uploads", "")])
        guard response.status == 200 else { throw client.failure(response, key: nil) }
        var abandoned: [String] = []
        for upload in S3Client.elements("Upload", in: response.body, raw: true) {
            let body = Data(upload.utf8)
            guard let key = S3Client.firstElement("Key", in: body), key.hasPrefix(prefix), !key.dropFirst(prefix.count).contains("/"),
                belongs(String(key.dropFirst(prefix.count))),
                let id = S3Client.firstElement("UploadId", in: body),
                let started = S3Client.firstElement("Initiated", in: body).flatMap(RFC3339.parse), Date().timeIntervalSince(started) > age
            else { continue }
            let aborted = try client.send("DELETE", key: key, query: [("uploadId", id)])
            guard aborted.status == 204 || aborted.status == 200 || aborted.status == 404 else { throw client.failure(aborted, key: key) }
            abandoned.append(String(key.dropFirst(prefix.count)))
        }
        return abandoned
    }

    public func delete(_ name: String) throws {
        let key = place.key(name)
        let response = try client.send("DELETE", key: key)
        guard response.status == 204 || response.status == 200 || response.status == 404 else { throw client.failure(response, key: key) }
    }

    /// DeleteObjects, up to ``deleteBatch`` keys a request, where each would take a request of
    /// its own. A store without it (it answers 501 or `NotImplemented`) gets one request per key.
    public func delete(_ names: [String]) throws {
        var rest = names[...]
        while !rest.isEmpty {
            let batch = rest.prefix(max(1, min(deleteBatch, 1000)))
            rest = rest.dropFirst(batch.count)
            let keys = batch.map { "<Object><Key>\(S3Client.escape(place.key($0)))</Key></Object>" }.joined()
            let body = Data("<Delete><Quiet>true</Quiet>\(keys)</Delete>".utf8)
            // The API asks for the body's digest, MD5 by its definition: not a security use.
            let digest = Data(Insecure.MD5.hash(data: body)).base64EncodedString()
            let response = try client.send("POST", query: [("delete", "")], headers: [("Content-MD5", digest), ("Content-Type", "application/xml")], body: body)
            if response.status == 501 || S3Client.errorCode(response.body) == "NotImplemented" {
                for name in batch { try delete(name) }
                continue
            }
            guard response.status == 200 else { throw client.failure(response, key: nil) }
            // Quiet: the answer lists only the keys that could not be removed.
            if let failed = S3Client.elements("Error", in: response.body, raw: true).first {
                let key = S3Client.firstElement("Key", in: Data(failed.utf8)) ?? ""
                let code = S3Client.firstElement("Code", in: Data(failed.utf8)) ?? "no code"
                throw SaveError(code == "AccessDenied" ? .permissionDenied : .io, file: "s3://\(place.bucket)/\(key)", "cannot be removed (\(code))")
            }
        }
    }
}
