import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real S3-compatible server for the tests: moto's server (PyPI `moto[server]`, pinned and
/// installed by `scripts/setup` into `.tools/moto`), started on 127.0.0.1 on a free port with
/// signature checking on, and an IAM user whose key the tests sign with.
///
/// Started once for the whole test run and stopped when it ends. A test that needs it fails
/// (never skips) when it cannot start.
public final class MotoServer: @unchecked Sendable {
    public let port: Int
    public let accessKey: String
    public let secretKey: String
    private let process: Process

    public var endpoint: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The variables a `savetool` process reads.
    public var variables: [String: String] {
        var variables = ProcessInfo.processInfo.environment
        variables["AWS_ACCESS_KEY_ID"] = accessKey
        variables["AWS_SECRET_ACCESS_KEY"] = secretKey
        variables["AWS_REGION"] = "us-east-1"
        variables["AWS_ENDPOINT_URL"] = endpoint.absoluteString
        return variables
    }

    public static let tools = Corpus.packageRoot.appendingPathComponent(".tools/moto/bin")

    private static let lock = NSLock()
    nonisolated(unsafe) private static var running: MotoServer?

    /// The shared server, started on first use.
    public static func shared() throws -> MotoServer {
        try lock.withLock {
            if let running { return running }
            let server = try MotoServer()
            running = server
            return server
        }
    }

    private init() throws {
        let binary = Self.tools.appendingPathComponent("moto_server").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ServerError("moto's server is not installed at \(binary); run scripts/setup")
        }
        port = try Self.freePort()
        process = Process()
        // moto's own entry point, with a watch on this process: when the tests end, however they
        // end (a test runner need not run exit handlers), the server ends too instead of being
        // left behind.
        let launcher = """
            import os, sys, threading, time
            from moto.server import main
            parent = os.getppid()
            def watch():
                while os.getppid() == parent:
                    time.sleep(1)
                os._exit(0)
            threading.Thread(target=watch, daemon=True).start()
            # moto checks If-None-Match and then stores, in two steps on a threaded server: two
            # concurrent PUTs of one key could both pass. S3 makes the pair atomic, and the sync
            # server's tests rely on that, so moto's PUT is made one step here.
            from moto.s3.responses import S3Response
            put_lock, put_object = threading.Lock(), S3Response.put_object
            def atomic_put_object(self):
                with put_lock:
                    return put_object(self)
            S3Response.put_object = atomic_put_object
            # moto checks a signature against the query as the URL spells it; S3 decodes each
            # value and encodes it again (RFC 3986) first, so `prefix=a%2Fb` signs as AWS signs it.
            from urllib.parse import quote, unquote
            from botocore.auth import SigV4Auth
            canonical_query = SigV4Auth._canonical_query_string_url
            class Parts:
                def __init__(self, query): self.query = query
            def normalised_query(self, parts):
                pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
                query = "&".join(quote(unquote(k), safe="-_.~") + "=" + quote(unquote(v), safe="-_.~") for k, _, v in pairs)
                return canonical_query(self, Parts(query))
            SigV4Auth._canonical_query_string_url = normalised_query
            sys.argv = ["moto_server"] + sys.argv[1:]
            sys.exit(main())
            """
        process.executableURL = Self.tools.appendingPathComponent("python")
        process.arguments = ["-c", launcher, "-H", "127.0.0.1", "-p", String(port)]
        var variables = ProcessInfo.processInfo.environment
        // The first four calls (making the user, its policy and key) need no signature; every
        // later one is checked, so a wrong secret is refused as S3 refuses it.
        variables["INITIAL_NO_AUTH_ACTION_COUNT"] = "4"
        process.environment = variables
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while !Self.answers(port) {
            guard Date() < deadline, process.isRunning else {
                process.terminate()
                throw ServerError("moto's server did not start on 127.0.0.1:\(port)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let bootstrap = """
            import boto3, json, sys
            iam = boto3.client("iam", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="boot", aws_secret_access_key="boot")
            iam.create_user(UserName="savetool")
            policy = iam.create_policy(PolicyName="s3", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
            iam.attach_user_policy(UserName="savetool", PolicyArn=policy["Policy"]["Arn"])
            key = iam.create_access_key(UserName="savetool")["AccessKey"]
            print(key["AccessKeyId"], key["SecretAccessKey"])
            """
        let made = try Processes.run([Self.tools.appendingPathComponent("python").path, "-c", bootstrap, "http://127.0.0.1:\(port)"])
        let keys = made.outputText.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard made.status == 0, keys.count == 2 else {
            process.terminate()
            throw ServerError("could not make a user on moto's server: \(made.errors)")
        }
        (accessKey, secretKey) = (keys[0], keys[1])
        atexit { MotoServer.running?.process.terminate() }
    }

    /// A bucket of its own for one test (made with boto3, the reference client).
    public func makeBucket(_ name: String = "saves-" + UUID().uuidString.prefix(8).lowercased()) throws -> String {
        let script = """
            import boto3, sys
            boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3]).create_bucket(Bucket=sys.argv[4])
            """
        let made = try Processes.run([Self.tools.appendingPathComponent("python").path, "-c", script, endpoint.absoluteString, accessKey, secretKey, name])
        guard made.status == 0 else { throw ServerError("cannot make the bucket \(name): \(made.errors)") }
        return name
    }

    /// Puts an object with boto3, the reference client: what another tool, or a run cut short, leaves.
    public func put(bucket: String, key: String, text: String) throws {
        let script = """
            import boto3, sys
            boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3]).put_object(Bucket=sys.argv[4], Key=sys.argv[5], Body=sys.argv[6].encode())
            """
        let made = try Processes.run([Self.tools.appendingPathComponent("python").path, "-c", script, endpoint.absoluteString, accessKey, secretKey, bucket, key, text])
        guard made.status == 0 else { throw ServerError("cannot put \(key): \(made.errors)") }
    }

    /// An object's bytes as text, read with boto3.
    public func text(bucket: String, key: String) throws -> String {
        let script = """
            import boto3, sys
            body = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3]).get_object(Bucket=sys.argv[4], Key=sys.argv[5])["Body"].read()
            sys.stdout.write(body.decode())
            """
        let read = try Processes.run([Self.tools.appendingPathComponent("python").path, "-c", script, endpoint.absoluteString, accessKey, secretKey, bucket, key])
        guard read.status == 0 else { throw ServerError("cannot read \(key): \(read.errors)") }
        return read.outputText
    }

    /// Every key in `bucket`, listed with boto3.
    public func keys(bucket: String) throws -> [String] {
        let script = """
            import boto3, sys
            client = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3])
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=sys.argv[4]):
                for item in page.get("Contents", []): print(item["Key"])
            """
        let listed = try Processes.run([Self.tools.appendingPathComponent("python").path, "-c", script, endpoint.absoluteString, accessKey, secretKey, bucket])
        guard listed.status == 0 else { throw ServerError("cannot list \(bucket): \(listed.errors)") }
        return listed.outputText.split(separator: "\n").map(String.init)
    }

    public static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw ServerError("no free port: \(String(cString: strerror(errno)))") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    public static func answers(_ port: Int) -> Bool {
        guard let socket = connectToLoopback(port) else { return false }
        close(socket)
        return true
    }

    /// A TCP connection to 127.0.0.1:`port`, or `nil` when nothing accepts it; the caller closes it.
    public static func connectToLoopback(_ port: Int) -> Int32? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            close(socket)
            return nil
        }
        return socket
    }

    public struct ServerError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
