import ArgumentParser
import Foundation
import SaveKit

extension ParsableCommand {
    /// Ends the process for an error out of parsing or running, as every savetool binary does:
    /// a usage error is one line in the shape of every other error, with where to read more
    /// (`savetool: … (see savetool import --help)`), and exit 64; anything else as
    /// ArgumentParser reports it. `name` is the root command as users type it.
    public static func exitReporting(_ error: any Error, arguments: [String], name: String) -> Never {
        if !(error is ExitCode), exitCode(for: error).rawValue == Failure.Code.usage {
            var names = [name], command: any ParsableCommand.Type = Self.self
            for argument in arguments {
                guard let sub = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { break }
                (names, command) = (names + [argument], sub)
            }
            let help = (names + ["--help"]).joined(separator: " ")
            let known = command.configuration.subcommands.map { $0._commandName }
            // A mistyped command is said to be one, with the nearest, rather than its words
            // being "unexpected arguments".
            if let word = arguments.dropFirst(names.count - 1).first, !known.isEmpty, !word.hasPrefix("-"), !known.contains(word) {
                let nearest = known.map { (name: $0, distance: editDistance(word, $0)) }.min { $0.distance < $1.distance }
                let suggestion = if let nearest, nearest.distance <= 2 {
                    ", did you mean '\(nearest.name)'?"
                } else {
                    ", expected one of: " + known.joined(separator: ", ")
                }
                Console.error("savetool: unknown command '\(word)'\(suggestion) (see \(help))")
                Foundation.exit(Failure.Code.usage)
            }
            Console.error("savetool: \(message(for: error)) (see \(help))")
            Foundation.exit(Failure.Code.usage)
        }
        exit(withError: error)
    }
}

/// How many single-character edits turn `a` into `b` (Levenshtein).
func editDistance(_ a: String, _ b: String) -> Int {
    let first = Array(a.utf8), second = Array(b.utf8)
    var previous = Array(0...second.count)
    for index in 0..<first.count {
        var current = [index + 1]
        for other in 0..<second.count {
            let replaced = previous[other] + (first[index] == second[other] ? 0 : 1)
            let removed = previous[other + 1] + 1
            let inserted = current[other] + 1
            current.append(Swift.min(replaced, Swift.min(removed, inserted)))
        }
        previous = current
    }
    return previous[second.count]
}

/// The command line as text.
public enum CommandLineText {
    /// The arguments after the program's name, or the end of the process (exit 64) when one is
    /// not UTF-8: Swift reads such bytes as U+FFFD, so a path given so would name another file
    /// (`export -o bun\xE9.tar.gz` would write `bun\xEF\xBF\xBD.tar.gz`).
    public static func arguments() -> [String] {
        guard CommandLine.argc > 1 else { return [] }
        return (1..<Int(CommandLine.argc)).map { index in
            let pointer = CommandLine.unsafeArgv[index]!
            let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
            guard let text = String(validating: bytes, as: UTF8.self) else {
                Console.error("savetool: \(ExactFileName.printable(ExactFileName.string(bytes))): an argument that is not UTF-8, expected UTF-8 (a file so named is kept byte for byte when its folder is exported, backed up or imported)")
                Foundation.exit(Failure.Code.usage)
            }
            return text
        }
    }
}

extension CommandLineText {
    /// The first option of `options` given more than once in `arguments` (before a `--`), by
    /// any of its spellings (`-o`, `--output`), as `--name value` or `--name=value`; named as
    /// its first spelling. ArgumentParser keeps the last of a repeated option without a word,
    /// which drops a value the user meant to give.
    public static func repeatedOption(of options: [[String]], in arguments: [String]) -> String? {
        var seen: Set<Int> = []
        for argument in arguments.prefix(while: { $0 != "--" }) {
            guard let option = options.firstIndex(where: { $0.contains { argument == $0 || argument.hasPrefix($0 + "=") } }) else { continue }
            if !seen.insert(option).inserted { return options[option][0] }
        }
        return nil
    }
}
