import ArgumentParser
import CSaveToolSystem
import Foundation
import SaveKit
import SaveToolCLI

@main
struct SaveTool: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "savetool",
        abstract: "Read, convert, edit and compare the save files of apps and games.",
        discussion: """
            Save files come as JSON, XML property lists and binary property lists (what \
            UserDefaults writes). savetool reads them all into one value model and writes any \
            of them back without losing a type, a value or the order of keys.

            Exit codes:
              0   success
              1   a negative answer: differences found, no such value, files that failed
              64  usage error (unknown option, codec or kind; options that contradict each other)
              65  bad data (unparsable, invalid for its schema, a damaged archive)
              66  an input does not exist or cannot be read
              69  a part of savetool is not installed (serve needs savetool-serve beside it)
              73  the output cannot be created
              74  I/O error while reading or writing (a full disk included)
              75  temporary failure: another run holds the lock, or a server did not answer; try again
              77  permission denied

            Examples:
              savetool convert Preferences/com.example.game.plist -o game.json
              savetool get game.json /gameSave/level
              savetool diff yesterday.plist today.plist
            """,
        version: version,
        subcommands: [
            Convert.self, Inspect.self, Get.self, SetValue.self, Remove.self, Diff.self, Export.self, Import.self, Backup.self, Migrate.self, Merge.self, Validate.self, Formats.self, ServeHandOver.self, Sync.self,
        ]
    )

    /// Listed here so that `savetool --help` shows them; each command reads its own copy.
    @OptionGroup(title: "Global options (before or after the command)") var global: GlobalOptions

    /// Global options may come before the command (`savetool --json inspect x`): they are
    /// moved after it, where the command's own copy of ``GlobalOptions`` reads them.
    static func main() {
        // Past a file-size limit (ulimit -f), write() should fail with EFBIG — reported, exit
        // 74, the temporary file removed — rather than the process being killed by SIGXFSZ.
        signal(SIGXFSZ, SIG_IGN)
        Console.protectStandardDescriptors()
        // Buffers of 4 MiB and more (an upload's parts) are mapped on their own and returned
        // when freed, rather than kept in malloc's per-thread arenas: resident memory falls when
        // a part has gone up, and an upload of any size stays flat.
        savetool_map_buffers_from(4 << 20)
        // A plugin leads a process group of its own, which Ctrl-C does not reach: interrupted,
        // savetool stops what it started before it goes.
        savetool_stop_tracked_groups_on_interrupt()
        let arguments = GlobalOptions.movedAfterCommand(CommandLineText.arguments())
        Console.beforeMessage = { ProgressBar.active?.erase() }
        // The sync server is its own binary, so that every other command starts without
        // loading swift-nio (about 1.3 ms of a 12 ms convert): `serve` hands its arguments over.
        if arguments.first == "serve" { ServeHandOver.run(Array(arguments.dropFirst())) }
        do {
            var command: any ParsableCommand
            do {
                command = try parseAsRoot(arguments)
            } catch {
                // `set save.json /x -3`: a negative number read as an option. No option of
                // savetool starts with a digit, so it is a value: parsed again after `--`.
                // (Not after a validation that has already spoken and chosen its exit code.)
                guard !(error is ExitCode), let retried = GlobalOptions.negativeNumbersAsValues(arguments), let parsed = try? parseAsRoot(retried)
                else { throw error }
                command = parsed
            }
            if command is any StreamsBundles {
                // One malloc arena for the few threads of a bundle's stream. glibc gives each
                // thread that allocates an arena of its own, and memory freed in one is reused
                // by no other: the thread that keeps a manifest's entries while the main thread
                // reads them raised a second backup of 1,000,000 files from 63 to 71 MiB; with
                // one arena it is 55–57 MiB, and import and export of 100,000 files take as
                // long (docs/performance.md). Commands that run a thread per core (migrate,
                // merge) keep glibc's arenas.
                savetool_limit_malloc_arenas(1)
            }
            try command.run()
            Console.finish()
        } catch {
            // A negative answer (diff's 1) that could not be printed is an output failure.
            if let exit = error as? ExitCode, exit.rawValue == Failure.Code.negative { Console.finish() }
            exitReporting(error, arguments: arguments, name: "savetool")
        }
    }
}
