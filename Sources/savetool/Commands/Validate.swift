import ArgumentParser
import Foundation
import SaveKit

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Recognise a save file's kind and version and check it against that version's schema.",
        discussion: "Exit 0 when valid; 65 with one line per problem (its JSON Pointer) when not, or when no kind recognises the file.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: "The save file.")
    var file: String

    @Option(help: ArgumentHelp("The kind to check against, instead of recognising it.", valueName: "kind"))
    var kind: String?

    func run() throws {
        try Failure.reporting(file: file) {
            let migrator = Migrator(kinds: try global.kinds())
            let registry = global.registry()
            let document = try LoadedDocument.load(file, registry: registry, reading: reading)
            guard let (found, recognition) = migrator.kind(of: document.value, path: file, named: kind) else {
                throw LocatedError(file: file, message: " no known kind recognises it, expected one of: \(migrator.kinds.map(\.name).joined(separator: ", ")) (or --formats <dir>)", code: Failure.Code.dataError)
            }
            guard case .version(let version) = recognition else {
                throw LocatedError(file: file, message: " \(Self.problem(found, recognition))", code: Failure.Code.dataError)
            }
            var violations = found.schemas[version]?.violations(of: document.value) ?? []
            // Embedded documents are checked against their own kinds, their pointers prefixed.
            for embedded in migrator.embeddedDocuments(in: document.value, of: found, registry: registry) {
                guard let inner = embedded.value else {
                    violations.append(Schema.Violation(at: embedded.pointer, message: "not a \(embedded.codec.id) document"))
                    continue
                }
                guard let innerKind = embedded.kind, case .version(let innerVersion) = embedded.recognition else {
                    let message = switch (embedded.kind, embedded.recognition) {
                    case (let innerKind?, .future), (let innerKind?, .ambiguous): Self.problem(innerKind, embedded.recognition)
                    default: "an embedded document no version of \(found.embedded[embedded.pointer]?.kind ?? "any kind") recognises"
                    }
                    violations.append(Schema.Violation(at: embedded.pointer, message: message))
                    continue
                }
                let innerViolations = innerKind.schemas[innerVersion]?.violations(of: inner) ?? []
                for violation in innerViolations {
                    violations.append(Schema.Violation(at: JSONPointer(tokens: embedded.pointer.tokens + violation.at.tokens), message: violation.message))
                }
                if !global.json && !global.quiet && innerViolations.isEmpty {
                    Console.output("\(file)\(embedded.pointer.displayText): \(innerKind.describe(.version(innerVersion))), valid\n")
                }
            }
            if global.json {
                try Console.outputJSON([
                    "file": .string(file), "kind": .string(found.name), "version": .int(UInt64(version)), "valid": .bool(violations.isEmpty),
                    "violations": .array(violations.map { ["path": .string($0.at.description), "message": .string($0.message)] }),
                ])
            }
            for violation in violations { Console.error("savetool: \(file):\(violation)") }
            if !violations.isEmpty { throw ExitCode(Failure.Code.dataError) }
            if !global.json && !global.quiet {
                let schema = found.schemas[version] == nil ? " (no schema for this version)" : ""
                Console.output("\(file): \(found.describe(.version(version))), valid\(schema)\n")
            }
        }
    }

    /// Why a recognised document cannot be validated.
    private static func problem(_ kind: SaveKind, _ recognition: SaveKind.Recognition) -> String {
        if case .ambiguous = recognition { return "\(kind.describe(recognition)), expected exactly one" }
        return kind.describe(recognition)
    }
}
