import ArgumentParser
import Foundation
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#endif

/// `savetool serve …` runs `savetool-serve …`, installed beside savetool: the server's framework
/// (swift-nio, Hummingbird) stays out of the binary every other command starts. This entry
/// lists it in `savetool --help`; its own help is `savetool serve --help`.
struct ServeHandOver: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run a sync server: devices push saves, and concurrent pushes are merged, not overwritten.",
        discussion: """
            Runs savetool-serve, installed beside savetool. Its options (--store, --port, \
            --tokens, --tls-cert …) are listed by savetool serve run --help.

            Example:
              savetool serve --store /var/lib/savetool/sync
            """)

    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []

    func run() throws { Self.run(arguments) }

    /// Replaces this process with `savetool-serve`, or exits 69 when it is not beside savetool.
    static func run(_ arguments: [String]) -> Never {
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let server = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("savetool-serve").path
        let argv = ([server] + arguments).map { strdup($0) } + [nil]
        execv(server, argv)
        Console.error("savetool: \(server): \(String(cString: strerror(errno))), expected savetool-serve installed beside savetool (scripts/install puts it there)")
        Glibc.exit(69)
    }
}
