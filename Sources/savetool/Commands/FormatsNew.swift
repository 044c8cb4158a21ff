import ArgumentParser
import Foundation
import SaveKit
import SaveToolCLI

extension Formats {
    /// `savetool formats new <kind> --codec <id>`: a kind folder to start from, that loads.
    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Write a new save kind's folder to start from: kind.json and schema-v1.json.",
            discussion: """
                The folder <dir>/<kind>/ gets a kind.json (its name, codec, the files it claims, \
                where its version is) and a schema-v1.json that accepts any object. Edit them, \
                then check with savetool --formats <dir> formats show <kind>; the files of a \
                kind are described in docs/formats.md of the source repository. An existing \
                folder is never overwritten.

                Examples:
                  savetool formats new starfarm.save --codec json --file Saves/farm.json
                  savetool formats new com.example.blocks --codec bplist --directory MyFormats
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("The kind's name, such as starfarm.save.", valueName: "kind"))
        var kind: String

        @Option(help: ArgumentHelp("The codec of its files (see savetool formats list).", valueName: "id"))
        var codec: String

        @Option(help: ArgumentHelp("A path its files end with, such as Saves/farm.json.", valueName: "path"))
        var file: String?

        @Option(help: ArgumentHelp("The JSON Pointer of the field holding its version.", valueName: "pointer"))
        var versionPath = "/saveVersion"

        @Option(help: ArgumentHelp("Where to write the kind's folder (default: the current one).", valueName: "dir"), transform: PathArgument.named)
        var directory = "."

        func validate() throws {
            guard !kind.isEmpty, !kind.contains("/"), kind != ".", kind != ".." else {
                throw ValidationError("'\(kind)' cannot name a folder, expected a name such as starfarm.save")
            }
        }

        func run() throws {
            try Failure.reporting {
                let registry = global.registry()
                // A kind describes save documents; an archive holds files, and no kind reads one.
                if try registry.requireCodec(id: codec).traits.contains(.archive) {
                    let documents = registry.codecs.filter { !$0.traits.contains(.archive) }.map(\.id)
                    throw ValidationError("--codec \(codec): an archive codec, expected one of save documents: \(documents.joined(separator: ", "))")
                }
                _ = try JSONPointer(parsing: versionPath)
                let folder = URL(fileURLWithPath: directory).appendingPathComponent(kind)
                let kindFile: SaveValue = [
                    "format": "savetool.kind/1",
                    "kind": .string(kind),
                    "title": .string(kind),
                    "files": .array([.string(file ?? "\(kind).\(Self.fileExtension(of: codec, in: registry))")]),
                    "codec": .string(codec),
                    "version": ["current": 1, "path": .string(versionPath)],
                ]
                let schema: SaveValue = ["type": "object"]
                // The formats folder is made as needed (`--directory MyFormats` the first time);
                // the kind's own folder must be new.
                do { try FileManager.default.createDirectory(atPath: folder.deletingLastPathComponent().path, withIntermediateDirectories: true) } catch {
                    throw SaveError(.cannotCreate, file: folder.deletingLastPathComponent().path, "cannot be created: \(FileError.reason(of: error))")
                }
                guard mkdir(folder.path, 0o755) == 0 else {
                    throw SaveError(.cannotCreate, file: folder.path, errno == EEXIST ? "already exists, expected a new folder (nothing is overwritten)" : FileError.reason(errno))
                }
                do {
                    for (name, value) in [("kind.json", kindFile), ("schema-v1.json", schema)] {
                        let output = try AtomicFileOutput(path: folder.appendingPathComponent(name).path)
                        try JSONCodec().encode(value).withUnsafeBytes { try output.write($0) }
                        try output.commit()
                    }
                    // What it wrote loads: the same checks as any kind folder.
                    _ = try KindLoader.load(folder: folder.path)
                } catch {
                    // No half-written folder left to block the next try.
                    try? FileManager.default.removeItem(at: folder)
                    throw error
                }
                if global.json {
                    try Console.outputJSON([
                        "kind": .string(kind), "folder": .string(folder.path),
                        "created": .array([.string(folder.path + "/kind.json"), .string(folder.path + "/schema-v1.json")]),
                    ])
                } else if !global.quiet {
                    Console.output("""
                        created \(folder.path)/kind.json and schema-v1.json
                        next: edit them, then savetool --formats \(directory) formats show \(kind)

                        """)
                }
            }
        }

        /// The name its files end with: binary plists and keyed archives are `.plist`, as the
        /// apps that write them name them (the codecs' own extensions are for telling files
        /// apart).
        static func fileExtension(of codec: String, in registry: CodecRegistry) -> String {
            if ["bplist", "keyed"].contains(codec) { return "plist" }
            return registry.codec(id: codec)?.fileExtensions.first ?? codec
        }
    }
}
