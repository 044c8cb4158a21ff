import Foundation
import SaveKit

/// The multipart-upload calls that both a streamed upload and a large copy make: start, put a
/// part (sent, or copied from a range of another object on the server), complete, abort.
struct S3Multipart {
    let client: S3Client
    let key: String
    let id: String

    /// Starts a multipart upload of `key`.
    static func start(_ client: S3Client, key: String) throws -> S3Multipart {
        let created = try client.send("POST", key: key, query: [("uploads", "")])
        guard created.status == 200, let id = S3Client.firstElement("UploadId", in: created.body) else { throw client.failure(created, key: key) }
        return S3Multipart(client: client, key: key, id: id)
    }

    private func query(_ number: Int) -> [(String, String)] { [("partNumber", String(number)), ("uploadId", id)] }

    /// Sends part `number`; returns its ETag.
    func put(_ number: Int, body: Data) throws -> String {
        let response = try client.send("PUT", key: key, query: query(number), body: body)
        guard response.status == 200, let etag = response.header("ETag") else { throw client.failure(response, key: key) }
        return etag
    }

    /// Makes part `number` a copy of bytes `range` of `source` (`/bucket/key`, encoded), on the
    /// server; returns its ETag.
    func copy(_ number: Int, from source: String, range: ClosedRange<Int64>) throws -> String {
        let response = try client.send(
            "PUT", key: key, query: query(number),
            headers: [("x-amz-copy-source", source), ("x-amz-copy-source-range", "bytes=\(range.lowerBound)-\(range.upperBound)")])
        // A copy can fail after its 200 has begun: the error is then in the body.
        guard response.status == 200, S3Client.errorCode(response.body) == nil, let etag = S3Client.firstElement("ETag", in: response.body) else {
            throw client.failure(response, key: key)
        }
        return etag
    }

    /// Completes the upload from its parts' ETags, in order (part 1 first).
    func complete(_ etags: [String], headers: [(String, String)] = []) throws {
        let parts = etags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>" }.joined()
        let completed = try client.send("POST", key: key, query: [("uploadId", id)], headers: headers, body: Data("<CompleteMultipartUpload>\(parts)</CompleteMultipartUpload>".utf8))
        // S3 can answer 200 with an error document when completing fails late.
        guard completed.status == 200, S3Client.errorCode(completed.body) == nil else { throw client.failure(completed, key: key) }
    }

    /// Gives the upload up. One that fails leaves parts that the next backup run's cleanup (or
    /// a bucket lifecycle rule for incomplete uploads) removes.
    func abort() {
        _ = try? client.send("DELETE", key: key, query: [("uploadId", id)])
    }
}
