import ArgumentParser
import Foundation
import SaveKit
import SaveToolCLI

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Recognise a save file's kind and version and check it against that version's schema.",
        discussion: """
            Exit 0 when valid; 65 with one line per problem (its JSON Pointer) when not, or when \
            no kind recognises the file. The kinds are listed by savetool formats list.

            Examples:
              savetool validate Documents/current_tournament.json
              savetool validate ~/Library/Preferences/com.example.blocks.plist
              savetool validate old-save.json --kind kape.tournament --json
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: "The save file.", transform: PathArgument.named)
    var file: String

    @Option(help: ArgumentHelp("The kind to check against, instead of recognising it.", valueName: "kind"))
    var kind: String?

    func run() throws { try reading.applying(read) }

    private func read() throws {
        try Failure.reporting(file: file) {
            let migrator = Migrator(kinds: try global.kinds())
            if let kind, migrator.kind(named: kind) == nil {
                throw SaveError(.usage, "no save kind '\(kind)', expected one of: \(migrator.kinds.map(\.name).joined(separator: ", "))")
            }
            let registry = reading.registry(from: global)
            let document = try LoadedDocument.load(file, registry: registry, reading: reading)
            let claimPath = FileWalk.File.claimPath(of: file)
            guard let match = migrator.match(document.value, path: claimPath, named: kind) else {
                let several = kind == nil ? migrator.contentMatches(document.value).map(\.kind.name) : []
                if several.count > 1 {
                    let problem = "recognised by the fingerprints of \(several.count) kinds (\(several.joined(separator: ", "))), expected one"
                    if global.json { try Console.outputJSON(["file": .string(file), "valid": .bool(false), "error": .string(problem)]) }
                    throw LocatedError(file: file, message: " \(problem) (name it with --kind)", code: Failure.Code.dataError)
                }
                if global.json { try Console.outputJSON(["file": .string(file), "valid": .bool(false), "error": .string("no known kind claims it")]) }
                throw LocatedError(
                    file: file, message: " no known kind claims it by its path or recognises its content, expected one of: \(migrator.kinds.map(\.name).joined(separator: ", ")) (or name one with --kind)",
                    code: Failure.Code.dataError)
            }
            let found = match.kind
            guard case .version(let version) = match.recognition else {
                if global.json {
                    var fields: SaveValue = [
                        "file": .string(file), "kind": .string(found.name), "why": .string(match.evidence.description), "valid": .bool(false),
                        "error": .string(Self.problem(found, match.recognition, in: document.value)),
                    ]
                    if case .future(let version) = match.recognition { try? fields.setValue(.int(UInt64(version)), at: JSONPointer(tokens: ["version"])) }
                    try Console.outputJSON(fields)
                }
                throw LocatedError(file: file, message: " \(Self.problem(found, match.recognition, in: document.value)) (\(match.evidence))", code: Failure.Code.dataError)
            }
            let violations = migrator.violations(in: document.value, of: found, version: version, registry: registry)
            // The saves embedded in it, each with its kind and version, as the text says them.
            var embeddedSaves: [SaveValue] = []
            for embedded in migrator.embeddedDocuments(in: document.value, of: found, registry: registry) {
                guard let innerKind = embedded.kind, case .version(let innerVersion) = embedded.recognition else { continue }
                let problems = violations.count { $0.at.tokens.starts(with: embedded.pointer.tokens) }
                embeddedSaves.append([
                    "path": .string(embedded.pointer.description), "kind": .string(innerKind.name), "version": .int(UInt64(innerVersion)), "valid": .bool(problems == 0),
                ])
                if !global.json && !global.quiet {
                    // Valid or not, as the holder's line says it; the places go to standard error.
                    let verdict = problems == 0 ? "valid" : "not valid: \(problems) problem\(problems == 1 ? "" : "s")"
                    Console.outputLines(["\(file)\(embedded.pointer.displayText): \(innerKind.describe(.version(innerVersion))), \(verdict)"])
                }
            }
            if global.json {
                var fields: SaveValue = [
                    "file": .string(file), "kind": .string(found.name), "version": .int(UInt64(version)), "why": .string(match.evidence.description),
                    "valid": .bool(violations.isEmpty),
                    "violations": .array(violations.map { ["path": .string($0.at.description), "message": .string($0.message)] }),
                ]
                if !embeddedSaves.isEmpty { try? fields.setValue(.array(embeddedSaves), at: JSONPointer(tokens: ["embedded"])) }
                try Console.outputJSON(fields)
            }
            if !violations.isEmpty && !global.json && !global.quiet {
                // What it was checked as, as for a valid file; the places go to standard error.
                let count = "\(violations.count) problem\(violations.count == 1 ? "" : "s")"
                Console.outputLines(["\(file): \(found.describe(.version(version))) (\(match.evidence)), not valid: \(count)"])
            }
            for violation in violations { Console.error("savetool: \(file):\(violation)") }
            if !violations.isEmpty { throw ExitCode(Failure.Code.dataError) }
            if !global.json && !global.quiet {
                let schema = found.schemas[version] == nil ? " (no schema for this version)" : ""
                Console.outputLines(["\(file): \(found.describe(.version(version))) (\(match.evidence)), valid\(schema)"])
            }
        }
    }

    /// Why a recognised document cannot be validated.
    private static func problem(_ kind: SaveKind, _ recognition: SaveKind.Recognition, in document: SaveValue) -> String {
        switch recognition {
        case .ambiguous: return "\(kind.describe(recognition)), expected exactly one"
        case .unrecognized: return "\(kind.name), but \(kind.versionProblem(in: document))"
        default: return kind.describe(recognition)
        }
    }
}
