import Foundation
import TestSupport
import Testing

/// The module rules, read off the sources: what each module may import, that flag names live
/// only in the command-line tool, that libarchive is called from one folder and that no code
/// asks whether a codec is one concrete type.
@Suite("architecture")
struct ArchitectureTests {
    /// The Swift files of one target, with their text.
    static func sources(_ target: String) throws -> [(path: String, text: String)] {
        let root = Corpus.packageRoot.appendingPathComponent("Sources/\(target)").path
        let files = Files.regularFiles(under: root).filter { $0.hasSuffix(".swift") }
        return try files.map { ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8)) }
    }

    /// The modules a file imports, whatever the import's access or attributes
    /// (`internal import X`, `@_implementationOnly import X`, `@preconcurrency import X`).
    static func imports(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").compactMap { line in
            // Swift's regular expressions are slow: only the lines that could be an import.
            guard line.contains("import ") else { return nil }
            return line.firstMatch(of: /^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)/).map { String($0.output.1) }
        })
    }

    @Test func modulesImportOnlyWhatTheirLayerAllows() throws {
        // The server's framework and the event loops under it.
        let server: Set<String> = ["Hummingbird", "HummingbirdCore", "NIOCore", "NIOPosix", "Prometheus", "SaveServer"]
        let rules: [(target: String, forbidden: Set<String>)] = [
            ("SaveKit", server.union(["SaveArchive", "CArchive", "ArgumentParser", "savetool", "BuiltInFormats", "SaveStorage", "SaveStorageS3", "SaveHTTP", "SaveSync", "FoundationNetworking"])),
            ("SaveArchive", server.union(["ArgumentParser", "savetool", "SaveStorageS3", "SaveHTTP", "SaveSync", "FoundationNetworking"])),
            // The storage seam: the protocol and the local folder know nothing of networks.
            ("SaveStorage", server.union(["SaveArchive", "SaveStorageS3", "SaveHTTP", "FoundationNetworking", "ArgumentParser", "savetool"])),
            // HTTP goes through libcurl opened on demand: FoundationNetworking would link it
            // (and two dozen libraries) into every command's start-up.
            ("SaveStorageS3", server.union(["FoundationNetworking", "SaveArchive", "ArgumentParser", "savetool"])),
            ("SaveHTTP", server.union(["FoundationNetworking", "SaveArchive", "SaveStorage", "ArgumentParser", "savetool"])),
            // The sync client: wire types and HTTP through libcurl, no server framework.
            ("SaveSync", server.union(["FoundationNetworking", "SaveArchive", "SaveStorageS3", "ArgumentParser", "savetool"])),
            // The server: no object store of its own (it is handed a storage), no flags; archives
            // only through SaveArchive (its daily bundles).
            ("SaveServer", ["FoundationNetworking", "SaveStorageS3", "CArchive", "ArgumentParser", "savetool"]),
            // Only the server imports the framework; the tool starts it.
            ("savetool", server.subtracting(["SaveServer"]).union(["FoundationNetworking"])),
        ]
        for (target, forbidden) in rules {
            let files = try Self.sources(target)
            #expect(!files.isEmpty, "\(target) has no files")
            for file in files {
                let found = Self.imports(file.text).intersection(forbidden)
                #expect(found.isEmpty, "\(target)/\(file.path) imports \(found.sorted())")
            }
        }
    }

    /// Libraries say what a hint means; only the CLI names the flag (a server has no flags).
    @Test func flagNamesLiveOnlyInTheCommandLineTool() throws {
        var checked = 0
        for target in ["SaveKit", "SaveArchive", "SaveSync", "SaveServer"] {
            for file in try Self.sources(target) {
                for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    guard !code.hasPrefix("//") else { continue }
                    checked += 1
                    #expect(code.firstMatch(of: /"[^"]*--[a-z][a-z-]+[^"]*"/) == nil, "\(target)/\(file.path):\(number + 1): \(code)")
                }
            }
        }
        #expect(checked > 1000)
    }

    /// The targets under `Sources/` that hold Swift.
    static func swiftTargets() throws -> [String] {
        let root = Corpus.packageRoot.appendingPathComponent("Sources").path
        return try FileManager.default.contentsOfDirectory(atPath: root).sorted().filter { target in
            Files.regularFiles(under: root + "/" + target).contains { $0.hasSuffix(".swift") }
        }
    }

    /// What sets a codec apart is asked through `SaveCodec` (its traits, its viewed archive), so
    /// that a plugin or a new codec is treated as the built-in ones are: only a codec's own
    /// folder may test for its type with `is` or `as?`.
    @Test func concreteCodecTypesAreTestedOnlyInTheirOwnFolder() throws {
        var sources: [(folder: String, path: String, text: String)] = []
        for target in try Self.swiftTargets() {
            for file in try Self.sources(target) {
                let folder = (target + "/" + file.path).split(separator: "/").dropLast().joined(separator: "/")
                sources.append((folder, target + "/" + file.path, file.text))
            }
        }
        // Every type that conforms to `SaveCodec` where it is declared, with that file's folder.
        var codecFolders: [String: String] = [:]
        for source in sources {
            for match in source.text.matches(of: /(?m)^\s*(?:public |package )?(?:final )?(?:struct|class) (\w+)[^{\n]*:[^{\n]*\bSaveCodec\b/) {
                codecFolders[String(match.output.1)] = source.folder
            }
        }
        #expect(Set(codecFolders.keys).isSuperset(of: ["JSONCodec", "BinaryPlistCodec", "XMLPlistCodec", "KeyedArchiveCodec", "ExternalCodec", "ArchiveCodec"]))
        var checked = 0
        for source in sources {
            for (number, line) in source.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") else { continue }
                checked += 1
                // `is X`, `as? X`, `as! X`, and a pattern's `as X` (`case let x as X`, `catch let e as X`).
                guard line.contains("is ") || line.contains("as") else { continue }
                for match in line.matches(of: /\b(?:is|as[?!]?)\s+(\w+)/) {
                    guard let folder = codecFolders[String(match.output.1)] else { continue }
                    #expect(source.folder == folder || source.folder.hasPrefix(folder + "/"), "\(source.path):\(number + 1): \(line)")
                }
            }
        }
        #expect(checked > 10_000)
    }

    /// libarchive is reached through `SaveArchive/Archive` (reading and writing archives) and
    /// `SaveArchive/Compression` (its compression filters), nowhere else.
    @Test func libarchiveIsCalledFromTheArchiveFoldersOnly() throws {
        var callers: [String] = []
        for target in try Self.swiftTargets() {
            for file in try Self.sources(target) where Self.imports(file.text).contains("CArchive") || file.text.contains("archive_read_") || file.text.contains("archive_write_") {
                callers.append(target + "/" + file.path)
            }
        }
        #expect(!callers.isEmpty)
        for caller in callers {
            #expect(caller.hasPrefix("SaveArchive/Archive/") || caller.hasPrefix("SaveArchive/Compression/"), "\(caller) calls libarchive")
        }
    }
}
