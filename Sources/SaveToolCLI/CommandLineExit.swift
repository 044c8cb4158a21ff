import ArgumentParser
import Foundation

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
            Console.error("savetool: \(message(for: error)) (see \(help))")
            Foundation.exit(Failure.Code.usage)
        }
        exit(withError: error)
    }
}
