import Foundation
import SaveKit
import SaveStorage
import SaveStorageS3
import TestSupport
import Testing

/// The storage seam: one set of promises, checked against both implementations — a local
/// folder and a real S3-compatible server.
extension MotoServer {
    func environment(secret: String? = nil) -> AWSEnvironment {
        AWSEnvironment(accessKey: accessKey, secretKey: secret ?? secretKey, region: "us-east-1", endpoint: endpoint)
    }
}

@Suite("Storage")
struct StorageTests {
    /// A prefix holds names only: `..`, `.` and `//` would reach other keys over HTTP than the
    /// ones listed (a repository out of sight of its own lock), and are refused (64).
    @Test func aPrefixOfDotsOrEmptyNamesIsRefused() throws {
        #expect(try S3Location(parsing: "s3://saves-bucket/devices/qa/").prefix == "devices/qa")
        #expect(try S3Location(parsing: "s3://saves-bucket").prefix == "")
        for text in ["s3://saves-bucket/dd/p7/..", "s3://saves-bucket/de/./q", "s3://saves-bucket/df//q", "s3://saves-bucket/dg//", "s3://saves-bucket//x"] {
            #expect(throws: SaveError.self, "\(text)") { try S3Location(parsing: text) }
            #expect((try? S3Location(parsing: text)) == nil)
            do { _ = try S3Location(parsing: text) } catch let error as SaveError { #expect(error.category == .usage, "\(text)") }
        }
    }

    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case local, s3
        var testDescription: String { rawValue }
    }

    /// A fresh, empty repository of that kind, and a scratch folder for files.
    static func storage(_ kind: Kind) throws -> (storage: any SaveStorage, scratch: URL) {
        let scratch = try Processes.temporaryDirectory("storage")
        switch kind {
        case .local:
            let folder = scratch.appendingPathComponent("repo")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return (LocalFolderStorage(directory: folder.path), scratch)
        case .s3:
            let server = try MotoServer.shared()
            let bucket = try server.makeBucket()
            var storage = S3Storage(try S3Location(parsing: "s3://\(bucket)/devices/qa"), environment: server.environment())
            storage.partSize = 5 << 20  // S3's smallest part: a 12 MiB file goes up in three
            // An object past 6 MiB is copied in parts on the server, as one past 5 GB is.
            (storage.largestCopy, storage.copyPartSize) = (6 << 20, 5 << 20)
            return (storage, scratch)
        }
    }

    @Test(arguments: Kind.allCases)
    func smallObjectsAreWrittenReadListedAndDeleted(_ kind: Kind) throws {
        let (storage, scratch) = try Self.storage(kind)
        defer { try? FileManager.default.removeItem(at: scratch) }
        #expect(try storage.list().isEmpty)
        try storage.write(Array("first".utf8), to: "b.marker", ifAbsent: true)
        try storage.write(Array("one".utf8), to: "a.lock", ifAbsent: false)
        #expect(try storage.read("b.marker") == Array("first".utf8))
        #expect(try storage.list().map(\.name) == ["a.lock", "b.marker"])
        #expect(try storage.list().map(\.size) == [3, 5])
        // The compare-and-swap: a second exclusive write loses, and the first object stays.
        #expect { try storage.write(Array("second".utf8), to: "b.marker", ifAbsent: true) } throws: { ($0 as? SaveError)?.category == .conflict }
        #expect(try storage.read("b.marker") == Array("first".utf8))
        // The same bytes again are the same write (a retry whose first try went through).
        try storage.write(Array("first".utf8), to: "b.marker", ifAbsent: true)
        #expect(try storage.read("b.marker") == Array("first".utf8))
        try storage.write(Array("two".utf8), to: "a.lock", ifAbsent: false)
        #expect(try storage.read("a.lock") == Array("two".utf8))
        try storage.delete("a.lock")
        try storage.delete("a.lock")  // gone already: not an error
        #expect(try storage.list().map(\.name) == ["b.marker"])
        #expect { try storage.read("missing") } throws: { ($0 as? SaveError)?.category == .notFound }
        // A name that needs encoding on the way. (moto's signature check refuses `+`, `&`,
        // parentheses and non-ASCII in keys even from boto3; those are checked against
        // botocore's own signer below.)
        let spaced = "save 1.json"
        try storage.write(Array("spaced".utf8), to: spaced, ifAbsent: true)
        #expect(try storage.read(spaced) == Array("spaced".utf8))
        #expect(try storage.list().map(\.name) == ["b.marker", "save 1.json"])
        if let s3 = storage as? S3Storage {
            // Keys beside and below the prefix are not the repository's.
            for key in ["devices/qa-other/x.json", "devices/x.json", "devices/qa/deeper/y.json", "elsewhere/qa/z.json", "devices/qa"] {
                try MotoServer.shared().put(bucket: s3.place.bucket, key: key, text: "{}")
            }
            #expect(try storage.list().map(\.name) == ["b.marker", "save 1.json"])
        }
        try storage.delete(spaced)
    }

    /// Several objects removed at once: a local folder flushes once, an object store sends
    /// DeleteObjects requests (two keys each here, so the batches are seen to follow on).
    @Test(arguments: Kind.allCases)
    func manyObjectsAreDeletedAtOnce(_ kind: Kind) throws {
        var (storage, scratch) = try Self.storage(kind)
        defer { try? FileManager.default.removeItem(at: scratch) }
        if var s3 = storage as? S3Storage {
            s3.deleteBatch = 2
            storage = s3
            try MotoServer.shared().put(bucket: s3.place.bucket, key: "devices/qa-other/v1", text: "{}")
        }
        let names = ["v1", "v2", "v3", "save 1.json", "v5", "kept"]
        for name in names { try storage.write(Array(name.utf8), to: name, ifAbsent: true) }
        try storage.delete(["v1", "v2", "v3", "save 1.json", "missing", "v5"])
        #expect(try storage.list().map(\.name) == ["kept"])
        try storage.delete([])
        if let s3 = storage as? S3Storage {
            let beside = try S3Storage(try S3Location(parsing: "s3://\(s3.place.bucket)/devices/qa-other"), environment: MotoServer.shared().environment())
            #expect(try beside.list().map(\.name) == ["v1"], "a key beside the prefix is not the repository's")
        }
    }

    /// Keys with every kind of character sign as botocore (the AWS SDK for Python) signs them.
    @Test func oddKeysSignAsBotocoreSignsThem() throws {
        let key = "devices/Zoë save+1 & (copy)~*.json"
        let query = [("partNumber", "2"), ("uploadId", "a/b+c=d")]
        let signer = SigV4(accessKey: "AKIDEXAMPLE", secretKey: "secret", region: "eu-central-1")
        let hash = SigV4.sha256Hex(Data())
        let headers = [("host", "127.0.0.1:9000"), ("x-amz-content-sha256", hash), ("x-amz-date", "20261123T120000Z")]
        let ours = signer.authorization(method: "PUT", path: "/qa-saves/" + key, query: query, headers: headers, payloadHash: hash, timestamp: "20261123T120000Z")
        let script = """
            import sys, urllib.parse
            from botocore.auth import S3SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.credentials import Credentials
            key, query = sys.argv[1], [("partNumber", "2"), ("uploadId", "a/b+c=d")]
            url = "http://127.0.0.1:9000/qa-saves/" + urllib.parse.quote(key, safe="/~") + "?" + "&".join(k + "=" + urllib.parse.quote(v, safe="~") for k, v in query)
            request = AWSRequest(method="PUT", url=url, headers={"x-amz-date": "20261123T120000Z", "x-amz-content-sha256": sys.argv[2]})
            request.context["timestamp"] = "20261123T120000Z"
            auth = S3SigV4Auth(Credentials("AKIDEXAMPLE", "secret"), "s3", "eu-central-1")
            canonical = auth.canonical_request(request)
            print(auth.signature(auth.string_to_sign(request, canonical), request))
            """
        let python = MotoServer.tools.appendingPathComponent("python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "scripts/setup installs botocore with moto")
        let theirs = try Processes.run([python, "-c", script, key, hash])
        #expect(theirs.status == 0, "\(theirs.errors)")
        #expect(ours.hasSuffix("Signature=" + theirs.outputText.trimmingCharacters(in: .whitespacesAndNewlines)), "\(ours)")
    }

    /// A file of several parts goes up and comes down byte for byte, and an exclusive upload
    /// over an existing object is refused.
    @Test(arguments: Kind.allCases)
    func largeFilesGoUpAndComeDownWhole(_ kind: Kind) throws {
        let (storage, scratch) = try Self.storage(kind)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<(12 << 20) + 12_345).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let file = scratch.appendingPathComponent("bundle.tar.gz")
        try bytes.write(to: file)
        try storage.upload(file: file.path, to: "qa-2026-11-20.tar.gz", ifAbsent: true)
        #expect(try storage.list() == [StoredObject(name: "qa-2026-11-20.tar.gz", size: Int64(bytes.count), modified: try storage.list().first?.modified)])
        let back = scratch.appendingPathComponent("back.tar.gz")
        try storage.download("qa-2026-11-20.tar.gz", to: back.path)
        #expect(try Data(contentsOf: back) == bytes)
        #expect { try storage.upload(file: file.path, to: "qa-2026-11-20.tar.gz", ifAbsent: true) } throws: { ($0 as? SaveError)?.category == .conflict }
        #expect(try storage.list().count == 1, "a refused upload leaves nothing behind")
        // A copy, over an existing object, in parts of the source (on S3, UploadPartCopy).
        try storage.write(Array("old".utf8), to: "qa-2026-11-21.tar.gz", ifAbsent: true)
        try storage.copy("qa-2026-11-20.tar.gz", to: "qa-2026-11-21.tar.gz")
        let copied = scratch.appendingPathComponent("copied.tar.gz")
        try storage.download("qa-2026-11-21.tar.gz", to: copied.path)
        #expect(try Data(contentsOf: copied) == bytes)
        #expect(try storage.removeAbandonedUploads(olderThan: 0, of: { _ in true }).isEmpty)
    }

    /// An object written as it is made (a bundle going up while it is exported): pieces of any
    /// size, across part boundaries, arrive byte for byte; one given up leaves nothing behind —
    /// no object, and on S3 no unfinished multipart upload; an exclusive one over an existing
    /// object is refused, short or long.
    @Test(arguments: Kind.allCases)
    func streamedUploadsArriveWholeOrNotAtAll(_ kind: Kind) throws {
        let (storage, scratch) = try Self.storage(kind)
        defer { try? FileManager.default.removeItem(at: scratch) }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(11 << 20) + 4_321).map { _ in UInt8.random(in: 0...255, using: &generator) }
        func stream(_ name: String, count: Int, ifAbsent: Bool, finishing: Bool = true) throws {
            var upload = try storage.startUpload(to: name, ifAbsent: ifAbsent)
            var offset = 0
            // Small pieces, then one that spans a part boundary, then small ones again.
            for size in [1, 7_777, 6 << 20, 65_536] + Array(repeating: 300_001, count: 20) where offset < count {
                let piece = bytes[offset..<min(offset + size, count)]
                try piece.withUnsafeBytes { try upload.write($0) }
                offset += piece.count
            }
            #expect(offset == count)
            if finishing { try upload.finish() } else { upload.abort() }
        }
        try stream("long.tar.gz", count: bytes.count, ifAbsent: true)
        try stream("short.tar.gz", count: 5_000, ifAbsent: true)
        let back = scratch.appendingPathComponent("back")
        try storage.download("long.tar.gz", to: back.path)
        #expect(try Data(contentsOf: back) == Data(bytes))
        #expect(try storage.read("short.tar.gz") == Array(bytes.prefix(5_000)))
        try stream("given-up.tar.gz", count: bytes.count, ifAbsent: true, finishing: false)
        #expect(try storage.list().map(\.name) == ["long.tar.gz", "short.tar.gz"])
        #expect(try storage.removeAbandonedUploads(olderThan: 0, of: { _ in true }).isEmpty, "an aborted upload leaves no parts behind")
        for (name, count) in [("long.tar.gz", bytes.count), ("short.tar.gz", 5_000)] {
            #expect { try stream(name, count: count, ifAbsent: true) } throws: { ($0 as? SaveError)?.category == .conflict }
        }
        // Uploads left unfinished (runs killed mid-way) are given up only for the objects asked
        // about: another program's upload under the same prefix is not touched.
        var killed: [any StorageUpload] = []
        for name in ["kape-2026-11-20.tar.gz", "handover.tar.zst"] {
            var upload = try storage.startUpload(to: name, ifAbsent: true)
            try bytes.prefix(6 << 20).withUnsafeBytes { try upload.write($0) }
            killed.append(upload)
        }
        let given = try storage.removeAbandonedUploads(olderThan: 0, of: { $0.hasPrefix("kape-") })
        #expect(given == (kind == .s3 ? ["kape-2026-11-20.tar.gz"] : []))
        if kind == .s3 {
            #expect(try storage.removeAbandonedUploads(olderThan: 0, of: { _ in true }) == ["handover.tar.zst"])
        }
        for upload in killed { upload.abort() }
        try stream("short.tar.gz", count: 9_000, ifAbsent: false)
        #expect(try storage.read("short.tar.gz") == Array(bytes.prefix(9_000)))
        #expect(try storage.list().map(\.name) == ["long.tar.gz", "short.tar.gz"])
        #expect(try storage.removeAbandonedUploads(olderThan: 0, of: { _ in true }).isEmpty, "a refused upload leaves no parts behind")
        if let local = storage as? LocalFolderStorage {
            // list() hides temporary names: the folder itself holds no leftover of any upload.
            #expect(try FileManager.default.contentsOfDirectory(atPath: local.directory).sorted() == ["long.tar.gz", "short.tar.gz"])
        }
    }

    /// A local folder's object names are single file names: a slash anywhere in the bytes is
    /// refused, also one that a combining mark joins to the character before it (Foundation's
    /// `contains`, which compares characters, let `../\u{301}x` through, one folder up).
    @Test func aLocalObjectNameWithASlashIsRefused() throws {
        let (storage, scratch) = try Self.storage(.local)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for name in ["../\u{301}x", "a/b", "a\u{0600}/b", "/x", "x/", ".", ".."] {
            #expect(throws: SaveError.self, "\(name.debugDescription)") { try storage.write([1], to: name, ifAbsent: true) }
        }
        #expect(!FileManager.default.fileExists(atPath: scratch.appendingPathComponent("\u{301}x").path))
        try storage.write([1], to: "a\u{301}.json", ifAbsent: true)
        #expect(try storage.read("a\u{301}.json") == [1])
    }

    @Test func aWrongSecretIsRefused() throws {
        let server = try MotoServer.shared()
        let bucket = try server.makeBucket()
        let storage = S3Storage(try S3Location(parsing: "s3://\(bucket)"), environment: server.environment(secret: "not-the-secret"))
        #expect { try storage.list() } throws: { ($0 as? SaveError)?.category == .permissionDenied }
        #expect { try storage.write([1], to: "x", ifAbsent: true) } throws: { ($0 as? SaveError)?.category == .permissionDenied }
    }

    @Test func aMissingBucketIsNotFound() throws {
        let server = try MotoServer.shared()
        let storage = S3Storage(try S3Location(parsing: "s3://no-such-bucket-here/x"), environment: server.environment())
        #expect { try storage.list() } throws: { error in
            let error = error as? SaveError
            return error?.category == .notFound && error?.description.hasPrefix("s3://no-such-bucket-here: no such bucket") == true
        }
    }

    /// Nothing listening: a bounded number of tries with backoff, then `busy` (exit 75).
    @Test func aServerThatDoesNotAnswerIsBusy() throws {
        let environment = AWSEnvironment(accessKey: "a", secretKey: "b", endpoint: URL(string: "http://127.0.0.1:9")!)
        let client = S3Client(environment: environment, bucket: "saves", timeout: 2, attempts: 2)
        let started = Date()
        #expect { try client.send("GET") } throws: { error in
            let error = error as? SaveError
            return error?.category == .busy && error?.description.contains("did not answer") == true && error?.description.contains("after 2 tries") == true
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }

    /// A server that takes the connection and never answers: each try waits the whole
    /// timeout, so the client gives up after two such tries, not after all of them.
    @Test func aServerThatNeverAnswersIsGivenUpAfterTwoTimeouts() throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let environment = AWSEnvironment(accessKey: "a", secretKey: "b", endpoint: URL(string: "http://127.0.0.1:\(silent.port)")!)
        let client = S3Client(environment: environment, bucket: "saves", timeout: 1, attempts: 4, givesUpOnSilence: true)
        let started = Date()
        #expect { try client.send("GET") } throws: { error in
            let error = error as? SaveError
            return error?.category == .busy && error?.description.contains("after 2 tries") == true
        }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 1.5 && waited < 8, "\(waited) s")  // two tries of 1 s, on a busy machine
        // The failed run's clean-up that follows (an upload to abort, a lock to give back) is
        // not waited on again: it fails at once, where each step waited two timeouts.
        let cleanUp = Date()
        #expect { try client.send("DELETE", key: "lock") } throws: { error in
            (error as? SaveError)?.description.contains("did not answer (") == true && (error as? SaveError)?.category == .busy
        }
        #expect(Date().timeIntervalSince(cleanUp) < 0.5)
        // A server's client keeps trying each request: one stalled request does not shut every
        // device out.
        let serving = S3Client(environment: environment, bucket: "saves", timeout: 1, attempts: 4)
        #expect(throws: SaveError.self) { try serving.send("GET") }
        let again = Date()
        #expect(throws: SaveError.self) { try serving.send("GET") }
        #expect(Date().timeIntervalSince(again) >= 1.5, "tried again, each try waiting its timeout")
        // And a run's client tries again once the window has passed.
        sleep(1)
        let later = Date()
        #expect(throws: SaveError.self) { try client.send("GET") }
        #expect(Date().timeIntervalSince(later) >= 1.5, "tried again after the window")
    }

    @Test func locationsAreParsedAndChecked() throws {
        let place = try S3Location(parsing: "s3://qa-farm/devices/pixel-7/")
        #expect(place.bucket == "qa-farm" && place.prefix == "devices/pixel-7")
        #expect(place.key("a.tar.gz") == "devices/pixel-7/a.tar.gz")
        #expect(place.description == "s3://qa-farm/devices/pixel-7")
        #expect(try S3Location(parsing: "s3://qa-farm").key("a") == "a")
        #expect(throws: SaveError.self) { try S3Location(parsing: "s3://Bad_Bucket/x") }
        #expect(throws: SaveError.self) { try AWSEnvironment.current([:]) }
        let environment = try AWSEnvironment.current(["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-central-1"])
        #expect(environment.region == "eu-central-1" && environment.endpoint.port == 9000)
    }

    /// The example AWS publishes for SigV4 (GET /test.txt with a Range, 2013-05-24).
    @Test func signaturesMatchAWSsPublishedExample() {
        let signer = SigV4(accessKey: "AKIAIOSFODNN7EXAMPLE", secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1")
        let emptyHash = SigV4.sha256Hex(Data())
        #expect(emptyHash == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let authorization = signer.authorization(
            method: "GET", path: "/test.txt", query: [],
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"), ("x-amz-content-sha256", emptyHash), ("x-amz-date", "20130524T000000Z")],
            payloadHash: emptyHash, timestamp: "20130524T000000Z")
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }
}
