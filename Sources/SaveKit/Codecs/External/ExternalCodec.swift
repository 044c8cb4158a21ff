import CSaveToolSystem
import Foundation

/// A codec provided by an executable named `savetool-codec-<id>`, found on `PATH` or in a
/// plugins directory. It speaks typed JSON on its standard input and output:
///
/// - `savetool-codec-<id> describe` prints `{"id", "extensions", "magic", "decode", "encode"}`,
///   and may say what its format can hold (`"holds": ["null", "date", "data"]`: the types past
///   strings, numbers, booleans, arrays and dictionaries); values it cannot hold are then
///   lowered or refused as for the built-in codecs, never handed to it as marker objects;
/// - `… decode` reads the native bytes and writes typed JSON;
/// - `… encode` reads typed JSON and writes the native bytes.
///
/// A plugin that exits non-zero fails with its own stderr as the message; one that runs past
/// ``timeout`` is killed.
public struct ExternalCodec: SaveCodec {
    public let id: String
    public let summary: String
    public let fileExtensions: [String]
    /// All types, unless `describe` lists what the format holds.
    public let capabilities: ValueCapabilities
    public let executable: String
    public let canDecode: Bool
    public let canEncode: Bool
    /// Magic prefixes from `describe`.
    public let magic: [[UInt8]]
    public var timeout: TimeInterval
    /// What the plugin may print: a save document's most, as for standard input. Past it the
    /// plugin is stopped, so that one printing without end stops in a message, not when
    /// memory runs out.
    public var outputLimit = FileIO.unsizedInputLimit

    public var origin: CodecOrigin { .plugin(path: executable) }

    /// How long `describe` may take (or the call timeout, if shorter): it runs on every start.
    public static let describeTimeout: TimeInterval = 3

    /// How long a plugin may run: `SAVETOOL_PLUGIN_TIMEOUT` seconds, else 10.
    public static var defaultTimeout: TimeInterval { timeoutSetting.seconds }

    /// `SAVETOOL_PLUGIN_TIMEOUT`, and what is wrong with it if it is not a number of seconds
    /// above 0 (the 10 seconds then stand).
    static var timeoutSetting: (seconds: TimeInterval, problem: String?) {
        guard let text = ProcessInfo.processInfo.environment["SAVETOOL_PLUGIN_TIMEOUT"] else { return (10, nil) }
        guard let seconds = TimeInterval(text), seconds.isFinite, seconds > 0 else {
            return (10, "SAVETOOL_PLUGIN_TIMEOUT is '\(text)', expected a number of seconds above 0; plugins get 10 s")
        }
        return (seconds, nil)
    }

    /// Asks the executable to describe itself.
    public init(executable: String, timeout: TimeInterval = ExternalCodec.defaultTimeout) throws(CodecError) {
        let name = executable.split(separator: "/").last.map(String.init) ?? executable
        let expectedID = String(name.dropFirst(ExternalCodec.prefix.count))
        // A description is a few hundred bytes: 1 MiB is far past any.
        let result = try Self.run(executable, argument: "describe", input: [], timeout: timeout, id: expectedID, outputLimit: 1 << 20)
        let description: SaveValue
        do {
            description = try JSONReader.parse(result, options: DecodingOptions())
        } catch {
            throw .plugin(id: expectedID, message: "describe printed something that is not JSON (\(error)), expected {\"id\", \"extensions\", \"magic\", \"decode\", \"encode\"}")
        }
        guard description.dictionaryValue != nil else {
            throw .plugin(id: expectedID, message: "describe printed \(description.typeNameWithArticle), expected an object {\"id\", \"extensions\", \"magic\", \"decode\", \"encode\"}")
        }
        // Every field is checked: a plugin whose description is mistyped is told so now, not
        // misquoted later (a "decode": "yes" read as false).
        func field<T>(_ name: String, _ expected: String, _ read: (SaveValue) -> T?) throws(CodecError) -> T? {
            guard let value = description[name] else { return nil }
            guard let read = read(value) else {
                throw .plugin(id: expectedID, message: "describe gave \"\(name)\" as \(value.typeNameWithArticle), expected \(expected)")
            }
            return read
        }
        let id = try field("id", "a string", \.stringValue)
        guard let id, id == expectedID else {
            let given = id.map { "the id \"\($0)\"" } ?? "no id"
            throw .plugin(id: expectedID, message: "describe gave \(given), expected \"\(expectedID)\" as in its file name")
        }
        let strings = { (value: SaveValue) -> [String]? in
            value.arrayValue.flatMap { items in items.allSatisfy { $0.stringValue != nil } ? items.compactMap(\.stringValue) : nil }
        }
        self.id = id
        self.executable = executable
        self.timeout = timeout
        self.fileExtensions = try field("extensions", "an array of extensions such as [\"zjson\"]", strings) ?? []
        self.magic = try field("magic", "an array of base64 strings", strings).map { prefixes throws(CodecError) in
            try prefixes.map { text throws(CodecError) in
                guard let bytes = Data(base64Encoded: text), !bytes.isEmpty else {
                    throw .plugin(id: id, message: "describe lists \"\(text)\" in \"magic\", expected the base64 of a file's first bytes")
                }
                return Array(bytes)
            }
        } ?? []
        let bool = { (value: SaveValue) -> Bool? in if case .bool(let flag) = value { flag } else { nil } }
        self.canDecode = try field("decode", "true or false", bool) ?? false
        self.canEncode = try field("encode", "true or false", bool) ?? false
        self.summary = try field("summary", "a string", \.stringValue) ?? "plugin"
        self.capabilities = try Self.capabilities(description["holds"], id: id)
    }

    /// The names `holds` may list, and what each adds; the plain JSON types are always held.
    static let holdable: [String: ValueCapabilities] = [
        "null": .null, "date": [.date, .subsecondDate, .anyYearDate], "date-seconds": [.date, .anyYearDate], "data": .data, "uid": .uid,
        "nonfinite-real": .nonFiniteReal, "control-characters": .controlCharacters,
        "string": [], "integer": [], "real": [], "bool": [], "array": [], "dictionary": [],
    ]

    private static func capabilities(_ holds: SaveValue?, id: String) throws(CodecError) -> ValueCapabilities {
        guard let holds else { return .all }
        guard let names = holds.arrayValue else {
            throw .plugin(id: id, message: "describe gave \"holds\" as a \(holds.typeName), expected an array of type names")
        }
        var capabilities: ValueCapabilities = []
        for name in names {
            guard let text = name.stringValue, let adds = holdable[text] else {
                throw .plugin(id: id, message: "describe lists \(name) in \"holds\", expected one of \(holdable.keys.sorted().joined(separator: ", "))")
            }
            capabilities.formUnion(adds)
        }
        return capabilities
    }

    static let prefix = "savetool-codec-"

    public func sniff(_ prefix: ArraySlice<UInt8>) -> Bool {
        magic.contains { !$0.isEmpty && prefix.starts(with: $0) }
    }

    public func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue {
        guard canDecode else { throw CodecError.plugin(id: id, message: "it does not decode (describe says \"decode\": false)") }
        let output = try Self.run(executable, argument: "decode", input: bytes, timeout: timeout, id: id, outputLimit: outputLimit)
        do {
            return try JSONReader.parse(output, options: options)
        } catch {
            throw CodecError.plugin(id: id, message: "decode printed invalid typed JSON: \(error)")
        }
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        guard canEncode else { throw CodecError.plugin(id: id, message: "it does not encode (describe says \"encode\": false)") }
        let json = try JSONCodec().encode(value, options: EncodingOptions())
        return try Self.run(executable, argument: "encode", input: json, timeout: timeout, id: id, outputLimit: outputLimit)
    }

    /// Finds `savetool-codec-*` executables in `directories`, first found first.
    public static func discover(in directories: [String]) -> [String] {
        var seen = Set<String>()
        var listed: [(device: UInt64, inode: UInt64)] = []
        var found: [String] = []
        let prefixBytes = Array(prefix.utf8)
        for directory in directories {
            // A folder named twice on PATH (`/bin` and `/usr/bin` on a merged-/usr system, or
            // one folder added twice) is listed once: a later copy could add nothing.
            guard let identity = FileIO.identity(of: directory),
                  !listed.contains(where: { $0 == identity }) else { continue }
            listed.append(identity)
            guard let entries = try? FileIO.names(in: directory, startingWith: prefixBytes) else { continue }
            let names = entries.compactMap { String(validating: $0, as: UTF8.self) }
            for name in names.sorted() where !seen.contains(name) {
                let path = directory + "/" + name
                guard FileIO.isExecutableFile(path) else { continue }
                seen.insert(name)
                found.append(path)
            }
        }
        return found
    }

    // MARK: - Running

    private final class Collected: @unchecked Sendable {
        var output: [UInt8] = []
        var errors: [UInt8] = []
        /// The output went past ``outputLimit``: the plugin was stopped.
        var overflowed = false
        /// Reading the output failed part way: what was read is not all it printed.
        var readFailure: Int32 = 0
    }

    /// What of a plugin's stderr is kept for its message: its end, where the error usually is.
    static let errorsKept = 2048

    /// How reading a plugin's stream ended.
    private enum ReadEnd {
        case end
        /// More than the limit came: with `keepingTail`, the last `limit` bytes are kept and
        /// reading went on to the end; else reading stopped.
        case pastLimit
        case failed(Int32)
    }

    /// Reads `descriptor` to its end, keeping up to `limit` bytes: the first ones (and stopping
    /// past the limit), or with `keepingTail` the last ones.
    private static func read(_ descriptor: Int32, into data: inout [UInt8], limit: Int, keepingTail: Bool) -> ReadEnd {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var past = false
        while true {
            let count = buffer.withUnsafeMutableBytes { FileIO.readSome(descriptor, into: $0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return .failed(errno) }
            if count == 0 {
                if data.count > limit { data.removeFirst(data.count - limit) }
                return past ? .pastLimit : .end
            }
            if data.count + count > limit && !keepingTail { return .pastLimit }
            data.append(contentsOf: buffer[..<count])
            // An array, not Data: Data's slices share its storage, which then never shrinks
            // (a plugin writing to stderr without end grew savetool to gigabytes).
            if data.count > 2 * limit {
                past = true
                data.removeFirst(data.count - limit)
            }
        }
    }

    /// The end of a plugin's stderr as kept, on one line: cli.md's errors are one line each.
    static func message(fromErrors errors: [UInt8]) -> String {
        let lines = String(decoding: errors, as: UTF8.self)
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.joined(separator: "; ")
    }

    static func run(
        _ executable: String, argument: String, input: [UInt8], timeout: TimeInterval, id: String, outputLimit: Int = FileIO.unsizedInputLimit
    ) throws(CodecError) -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [argument]
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        do {
            try process.run()
        } catch {
            throw .plugin(id: id, message: "cannot start \(executable): \(FileError.reason(of: error))")
        }
        let collected = Collected()
        let readers = DispatchGroup()
        // Output is read while input is written: a plugin that answers as it reads would
        // otherwise fill the pipe and wait for us while we wait for it. A thread each, not
        // Dispatch's pool: the two reads block, and on two cores they held the pool's threads
        // while the write waited about a second for the pool to grow.
        readers.enter()
        readers.enter()
        // The plugin leads a process group of its own where Foundation spawns it so (Linux):
        // stopping the group stops what it started too, which would otherwise run on, holding
        // its pipes. A group id is never given to a new process while the group has members.
        let pid = process.processIdentifier
        #if os(Linux)
        let leadsGroup = true  // swift-corelibs-foundation spawns with POSIX_SPAWN_SETPGROUP
        #else
        let leadsGroup = getpgid(pid) == pid
        #endif
        // Ctrl-C reaches savetool, not a group of its own: interrupted, savetool stops it first.
        if leadsGroup { savetool_track_child_group(pid) }
        defer { if leadsGroup { savetool_untrack_child_group(pid) } }
        Thread.detachNewThread {
            var output: [UInt8] = []
            switch read(stdout.fileHandleForReading.fileDescriptor, into: &output, limit: outputLimit, keepingTail: false) {
            case .end: break
            case .pastLimit:
                collected.overflowed = true
                if leadsGroup { kill(-pid, SIGKILL) }
                kill(pid, SIGKILL)
            case .failed(let code): collected.readFailure = code
            }
            collected.output = output
            readers.leave()
        }
        Thread.detachNewThread {
            var errors: [UInt8] = []
            _ = read(stderr.fileHandleForReading.fileDescriptor, into: &errors, limit: errorsKept, keepingTail: true)
            collected.errors = errors
            readers.leave()
        }
        let payload = Data(input)
        Thread.detachNewThread {
            signal(SIGPIPE, SIG_IGN)
            try? stdin.fileHandleForWriting.write(contentsOf: payload)
            try? stdin.fileHandleForWriting.close()
        }
        guard let exit = waitForExit(of: process, finished: finished, within: timeout) else {
            if leadsGroup { kill(-pid, SIGKILL) }
            kill(pid, SIGKILL)
            throw .plugin(id: id, message: "\(argument) ran longer than \(timeout == timeout.rounded() ? String(Int(timeout)) : String(timeout)) s and was stopped")
        }
        if readers.wait(timeout: .now() + 0.5) == .timedOut {
            // The plugin has answered and exited; something it left running holds the pipes.
            if leadsGroup { kill(-pid, SIGKILL) }
            if readers.wait(timeout: .now() + 2) == .timedOut {
                throw .plugin(id: id, message: "\(argument) exited but something it started still holds its output open")
            }
        }
        if collected.readFailure != 0 {
            throw .plugin(id: id, message: "reading what \(argument) printed failed: \(FileError.reason(collected.readFailure))")
        }
        if collected.overflowed {
            let limit = outputLimit >= 1 << 30 ? "\(outputLimit >> 30) GiB" : outputLimit >= 1 << 20 ? "\(outputLimit >> 20) MiB" : "\(outputLimit) bytes"
            let expected = argument == "describe" ? "a description of the plugin" : "a save document"
            throw .plugin(id: id, message: "\(argument) printed more than \(limit) and was stopped, expected \(expected)")
        }
        guard exit.status == 0, exit.exited else {
            let message = Self.message(fromErrors: collected.errors)
            let how = exit.exited ? "exit \(exit.status)" : "signal \(exit.status)"
            throw .plugin(id: id, message: "\(argument) failed (\(how))\(message.isEmpty ? "" : ": " + message)")
        }
        return collected.output
    }

    /// Waits up to `timeout` for the plugin to exit; its status, or nil if it is still running.
    ///
    /// Foundation learns of the exit (`finished`) through a socket that the plugin inherits, and
    /// so does anything the plugin starts: a process it leaves running hides its exit
    /// (swift-corelibs-foundation issue 4795). The exit is therefore also asked of the system,
    /// without reaping the plugin (`WNOWAIT`), so that Foundation still can.
    private static func waitForExit(of process: Process, finished: DispatchSemaphore, within timeout: TimeInterval) -> (status: Int32, exited: Bool)? {
        let pid = process.processIdentifier
        let deadline = DispatchTime.now() + timeout
        var pause = 1.0 / 1000
        while true {
            if finished.wait(timeout: .now() + pause) == .success { return (process.terminationStatus, process.terminationReason == .exit) }
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                #if os(Linux)
                let (exitedPID, status) = (info._sifields._sigchld.si_pid, info._sifields._sigchld.si_status)
                #else
                let (exitedPID, status) = (info.si_pid, info.si_status)
                #endif
                if exitedPID == pid { return (status, Int(info.si_code) == Int(CLD_EXITED)) }
            }
            if DispatchTime.now() >= deadline { return nil }
            pause = min(pause * 2, 20.0 / 1000)
        }
    }

}

/// The plugins' descriptions, gathered from the threads that asked for them.
private final class DescribedPlugins: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var results: [Result<ExternalCodec, CodecError>?]
    init(count: Int) { results = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ result: Result<ExternalCodec, CodecError>) { lock.withLock { results[index] = result } }
}

extension CodecRegistry {
    /// The built-in codecs followed by the plugins found in `pluginDirectories` and then on `PATH`.
    /// A plugin that fails to describe itself is reported in `problems` (one sentence each, for
    /// a warning) and left out.
    public static func withPlugins(
        directories pluginDirectories: [String], searchPath: Bool = true
    ) -> (registry: CodecRegistry, problems: [String]) {
        var registry = CodecRegistry.builtIn
        var problems: [String] = []
        var directories = pluginDirectories
        if searchPath, let path = ProcessInfo.processInfo.environment["PATH"] {
            directories += path.split(separator: ":").map(String.init)
        }
        // Every plugin describes itself at once, each within a short time: a plugin that hangs
        // costs a command that long once, however many there are.
        let executables = ExternalCodec.discover(in: directories)
        if !executables.isEmpty, let problem = ExternalCodec.timeoutSetting.problem { problems.append(problem) }
        let described = DescribedPlugins(count: executables.count)
        // A thread each (not a pool sized to the cores): each mostly waits for its process.
        let group = DispatchGroup()
        for (index, executable) in executables.enumerated() {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let result = Result { () throws(CodecError) -> ExternalCodec in
                    var codec = try ExternalCodec(executable: executable, timeout: min(ExternalCodec.defaultTimeout, ExternalCodec.describeTimeout))
                    codec.timeout = ExternalCodec.defaultTimeout
                    return codec
                }
                described.set(index, result)
            }
        }
        group.wait()
        for (executable, result) in zip(executables, described.results) {
            do {
                try registry.register(try result!.get())
            } catch {
                problems.append("ignoring plugin \(executable): \(error)")
            }
        }
        return (registry, problems)
    }
}
