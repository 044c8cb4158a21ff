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

    public var origin: CodecOrigin { .plugin(path: executable) }

    /// How long `describe` may take (or the call timeout, if shorter): it runs on every start.
    public static let describeTimeout: TimeInterval = 3

    /// How long a plugin may run: `SAVETOOL_PLUGIN_TIMEOUT` seconds, else 10.
    public static var defaultTimeout: TimeInterval {
        ProcessInfo.processInfo.environment["SAVETOOL_PLUGIN_TIMEOUT"].flatMap(TimeInterval.init) ?? 10
    }

    /// Asks the executable to describe itself.
    public init(executable: String, timeout: TimeInterval = ExternalCodec.defaultTimeout) throws(CodecError) {
        let name = executable.split(separator: "/").last.map(String.init) ?? executable
        let expectedID = String(name.dropFirst(ExternalCodec.prefix.count))
        let result = try Self.run(executable, argument: "describe", input: [], timeout: timeout, id: expectedID)
        let description: SaveValue
        do {
            description = try JSONReader.parse(result, options: DecodingOptions())
        } catch {
            throw .plugin(id: expectedID, message: "describe printed something that is not JSON (\(error)), expected {\"id\", \"extensions\", \"magic\", \"decode\", \"encode\"}")
        }
        guard let id = description["id"]?.stringValue, id == expectedID else {
            throw .plugin(id: expectedID, message: "describe gave the id \(description["id"].map { "\($0)" } ?? "nothing"), expected \"\(expectedID)\" as in its file name")
        }
        self.id = id
        self.executable = executable
        self.timeout = timeout
        self.fileExtensions = description["extensions"]?.arrayValue?.compactMap(\.stringValue) ?? []
        self.magic = description["magic"]?.arrayValue?.compactMap { $0.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) } } ?? []
        self.canDecode = description["decode"].map { $0 == .bool(true) } ?? false
        self.canEncode = description["encode"].map { $0 == .bool(true) } ?? false
        self.summary = description["summary"]?.stringValue ?? "plugin"
        self.capabilities = try Self.capabilities(description["holds"], id: id)
    }

    /// The names `holds` may list, and what each adds; the plain JSON types are always held.
    static let holdable: [String: ValueCapabilities] = [
        "null": .null, "date": [.date, .subsecondDate], "date-seconds": .date, "data": .data, "uid": .uid,
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
        let output = try Self.run(executable, argument: "decode", input: bytes, timeout: timeout, id: id)
        do {
            return try JSONReader.parse(output, options: options)
        } catch {
            throw CodecError.plugin(id: id, message: "decode printed invalid typed JSON: \(error)")
        }
    }

    public func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] {
        guard canEncode else { throw CodecError.plugin(id: id, message: "it does not encode (describe says \"encode\": false)") }
        let json = try JSONCodec().encode(value, options: EncodingOptions())
        return try Self.run(executable, argument: "encode", input: json, timeout: timeout, id: id)
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
                guard FileManager.default.isExecutableFile(atPath: path) else { continue }
                seen.insert(name)
                found.append(path)
            }
        }
        return found
    }

    // MARK: - Running

    private final class Collected: @unchecked Sendable {
        var output = Data()
        var errors = Data()
    }

    static func run(_ executable: String, argument: String, input: [UInt8], timeout: TimeInterval, id: String) throws(CodecError) -> [UInt8] {
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
            throw .plugin(id: id, message: "cannot start \(executable): \(error.localizedDescription)")
        }
        let collected = Collected()
        let readers = DispatchGroup()
        // Output is read while input is written: a plugin that answers as it reads would
        // otherwise fill the pipe and wait for us while we wait for it.
        DispatchQueue.global().async(group: readers) { collected.output = stdout.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: readers) { collected.errors = stderr.fileHandleForReading.readDataToEndOfFile() }
        let payload = Data(input)
        DispatchQueue.global().async {
            signal(SIGPIPE, SIG_IGN)
            try? stdin.fileHandleForWriting.write(contentsOf: payload)
            try? stdin.fileHandleForWriting.close()
        }
        // The plugin leads a process group of its own where Foundation spawns it so (Linux):
        // stopping the group stops what it started too, which would otherwise run on, holding
        // its pipes. A group id is never given to a new process while the group has members.
        let pid = process.processIdentifier
        #if os(Linux)
        let leadsGroup = true  // swift-corelibs-foundation spawns with POSIX_SPAWN_SETPGROUP
        #else
        let leadsGroup = getpgid(pid) == pid
        #endif
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            if leadsGroup { kill(-pid, SIGKILL) }
            kill(pid, SIGKILL)
            throw .plugin(id: id, message: "\(argument) ran longer than \(Int(timeout)) s and was stopped")
        }
        if readers.wait(timeout: .now() + 0.5) == .timedOut {
            // The plugin has answered and exited; something it left running holds the pipes.
            if leadsGroup { kill(-pid, SIGKILL) }
            if readers.wait(timeout: .now() + 2) == .timedOut {
                throw .plugin(id: id, message: "\(argument) exited but something it started still holds its output open")
            }
        }
        guard process.terminationStatus == 0, process.terminationReason == .exit else {
            let message = String(decoding: collected.errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw .plugin(id: id, message: "\(argument) failed (exit \(process.terminationStatus))\(message.isEmpty ? "" : ": " + message)")
        }
        return Array(collected.output)
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
    /// A plugin that fails to describe itself is reported in `problems` and left out.
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
                problems.append("\(executable): \(error)")
            }
        }
        return (registry, problems)
    }
}
