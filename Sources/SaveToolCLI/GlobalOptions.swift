import Foundation
import ArgumentParser
import BuiltInFormats
import SaveArchive
import SaveKit

/// Options every command accepts (savetool's and savetool-serve's).
public struct GlobalOptions: ParsableArguments, Sendable {
    public init() {}

    @Flag(help: "Machine-readable output on standard output: one JSON document, or one JSON line per file where a command goes through many (migrate, sync).")
    public var json = false

    @Flag(name: .shortAndLong, help: "Print only errors.")
    public var quiet = false

    @Option(name: .customLong("formats"), help: ArgumentHelp("A directory of save-kind folders (Formats/<kind>/), searched before the built-in ones (repeatable).", valueName: "dir"))
    public var formatDirectories: [String] = []

    @Option(name: .customLong("plugins"), help: ArgumentHelp("A directory holding savetool-codec-<id> plugin executables (repeatable); PATH is searched too.", valueName: "dir"))
    public var pluginDirectories: [String] = []

    /// A `--formats` or `--plugins` folder that does not exist is an error (66), not silently
    /// nothing: a typo would otherwise run every command without the user's kinds or plugins.
    public func validate() throws {
        for (directory, holding) in formatDirectories.map({ ($0, "save-kind folders") }) + pluginDirectories.map({ ($0, "savetool-codec-<id> plugins") }) {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
            guard exists, isDirectory.boolValue else {
                Console.error("savetool: \(directory): \(exists ? "not a folder" : "no such folder"), expected a folder of \(holding)")
                throw ExitCode(Failure.Code.noInput)
            }
        }
    }

    /// The arguments with every negative number (`-3`, `-0.5`, `-1e3`) moved after a `--` at
    /// the end, in order, where they are read as values; `nil` when there is none, or a `--` already.
    public static func negativeNumbersAsValues(_ arguments: [String]) -> [String]? {
        func isNegativeNumber(_ token: String) -> Bool {
            token.count > 1 && token.hasPrefix("-") && Double(token) != nil && token.dropFirst().first.map { $0.isNumber || $0 == "." } == true
        }
        guard !arguments.contains("--"), arguments.contains(where: isNegativeNumber) else { return nil }
        return arguments.filter { !isNegativeNumber($0) } + ["--"] + arguments.filter(isNegativeNumber)
    }

    public static let flags: Set<String> = ["--json", "-q", "--quiet"]
    public static let optionsWithValue: Set<String> = ["--plugins", "--formats"]

    /// `[--json, inspect, x]` → `[inspect, x, --json]`; stops at the first other option
    /// (`--help`, `--version`) and keeps anything after `--` last.
    public static func movedAfterCommand(_ arguments: [String]) -> [String] {
        var moved: [String] = []
        var index = 0
        while index < arguments.count {
            let token = arguments[index]
            if flags.contains(token) {
                moved.append(token)
                index += 1
            } else if optionsWithValue.contains(token), index + 1 < arguments.count {
                moved += [token, arguments[index + 1]]
                index += 2
            } else if optionsWithValue.contains(where: { token.hasPrefix($0 + "=") }) {
                moved.append(token)
                index += 1
            } else {
                break
            }
        }
        guard !moved.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        let end = rest.firstIndex(of: "--") ?? rest.endIndex
        rest.insert(contentsOf: moved, at: end)
        return rest
    }

    /// The built-in codecs plus any plugins; problems with plugins are warned about, not fatal.
    public func registry() -> CodecRegistry {
        // Once per run: plugins describe themselves once, and each problem is told once.
        RegistryOnce.shared.registry(for: pluginDirectories) {
            var (registry, problems) = CodecRegistry.withPlugins(directories: pluginDirectories)
            for problem in problems { warn(problem) }
            for codec in ArchiveCodec.all {
                do { try registry.register(codec) } catch { warn("\(error)") }
            }
            return registry
        }
    }

    /// The save kinds of `--formats` directories, then the built-in ones; a kind name found twice
    /// is taken from the first place.
    public func kinds() throws -> [SaveKind] {
        var kinds: [SaveKind] = []
        for directory in formatDirectories {
            for kind in try KindLoader.kinds(in: directory) where !kinds.contains(where: { $0.name == kind.name }) { kinds.append(kind) }
        }
        // Compiled into the binary: nothing to find beside it.
        for kind in try KindLoader.kinds(in: BuiltInFormats.folders, origin: "built-in") where !kinds.contains(where: { $0.name == kind.name }) {
            kinds.append(kind)
        }
        // A kind's codec must be one there is (built in or a plugin found), or its files could
        // never be read.
        let registry = registry()
        for kind in kinds {
            let named = (kind.codec.map { [(JSONPointer(tokens: ["codec"]), $0)] } ?? [])
                + kind.embedded.map { (JSONPointer(tokens: ["embedded", $0.key.description, "codec"]), $0.value.codec) }
            let file = (kind.origin == "built-in" ? "built-in/\(kind.name)" : kind.origin) + "/kind.json"
            for (pointer, codec) in named where registry.codec(id: codec) == nil {
                throw KindLoader.LoadError(
                    file: file, at: pointer,
                    message: "no codec \"\(codec)\", expected one of \(registry.codecs.map(\.id).joined(separator: ", ")) (or a plugin's id, with --plugins)")
            }
            // And an embedded document's kind one there is, or every document would be blamed for it.
            for (pointer, embedded) in kind.embedded {
                guard let name = embedded.kind, !kinds.contains(where: { $0.name == name }) else { continue }
                throw KindLoader.LoadError(
                    file: file, at: JSONPointer(tokens: ["embedded", pointer.description, "kind"]),
                    message: "no save kind \"\(name)\", expected one of \(kinds.map(\.name).sorted().joined(separator: ", "))")
            }
        }
        return kinds
    }

    public func warn(_ message: String) {
        guard !quiet else { return }
        Console.beforeMessage?()
        Console.error("savetool: warning: \(message)")
    }
}

/// The registry of this run, made the first time a command asks for it.
public final class RegistryOnce: @unchecked Sendable {
    public static let shared = RegistryOnce()
    private let lock = NSLock()
    private var made: (directories: [String], registry: CodecRegistry)?

    public func registry(for directories: [String], make: () -> CodecRegistry) -> CodecRegistry {
        lock.withLock {
            if let made, made.directories == directories { return made.registry }
            let registry = make()
            made = (directories, registry)
            return registry
        }
    }
}

/// Options of the commands that read documents.
public struct ReadingOptions: ParsableArguments {
    public init() {}

    @Option(help: ArgumentHelp("A key found twice in one dictionary: reject it, or keep the last value as Apple's readers do.", valueName: "reject|last"))
    public var duplicateKeys: DecodingOptions.DuplicateKeyPolicy = .reject

    @Option(help: ArgumentHelp("Read this entry of an archive (such as files/Documents/save.json in a bundle) as the document.", valueName: "path"))
    public var entry: String?

    @Option(help: ArgumentHelp("The input codec (json, plist, bplist or a plugin's id), when sniffing and the extension would guess wrong; it may claim a file a built-in codec would also read.", valueName: "codec"))
    public var from: String?

    @Flag(help: "Read a keyed archive (NSKeyedArchiver) as its flat $objects table, not as the objects it holds.")
    public var rawArchive = false

    /// The registry of `global`, reading keyed archives as these options say.
    public func registry(from global: GlobalOptions) -> CodecRegistry {
        var registry = global.registry()
        registry.seesThroughKeyedArchives = !rawArchive
        return registry
    }

    public var decoding: DecodingOptions {
        var options = DecodingOptions()
        options.duplicateKeys = duplicateKeys
        return options
    }

    /// Runs `body` with the documents embedded in what it reads read as these options say
    /// (`--duplicate-keys`), as the documents holding them are.
    public func applying<T>(_ body: () throws -> T) rethrows -> T {
        try EmbeddedDocument.$duplicateKeys.withValue(duplicateKeys, operation: body)
    }
}

extension DecodingOptions.DuplicateKeyPolicy: ExpressibleByArgument {}
