import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveServer
import SaveStorage
import SaveStorageS3
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#endif

@main
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "savetool serve",
        abstract: "Run a sync server: devices push saves, and concurrent pushes are merged, not overwritten.",
        discussion: """
            Devices push a save to a slot of a space (one account of one app) with the version \
            they last synced. A push on top of the head is stored as the next version; a push \
            from an older version is merged three ways with the head, by the save's kind's \
            merge rules, and the merged save is stored and sent back. A merge with conflicts \
            is kept (parked) and answered 409; nothing a device pushed is ever lost, and no \
            version is ever overwritten. See docs/server.md for the API.

            Without --tokens the server listens on 127.0.0.1 only. With them, each request \
            needs Authorization: Bearer <token>, and a token reaches only its spaces.

            savetool serve is savetool serve run: its options (--store, --port, --tokens, \
            --tls-cert …) are listed by savetool serve run --help.

            Examples:
              savetool serve --store /var/lib/savetool/sync --tokens tokens.json --host 0.0.0.0
              savetool serve --store sync --tokens tokens.json --tls-cert cert.pem --tls-key key.pem
              savetool serve --store s3://saves/sync --listen 127.0.0.1:8787 --backup-repo s3://saves/daily
              savetool serve token add --tokens tokens.json --spaces 'blocks/*' --access write
            """,
        version: "0.1.0",
        subcommands: [Run.self, TokenAdd.self],
        defaultSubcommand: Run.self
    )

    static func main() {
        // Global options may come first, as with savetool.
        let arguments = GlobalOptions.movedAfterCommand(CommandLineText.arguments())
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            exitReporting(error, arguments: arguments, name: "savetool serve")
        }
    }

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run the server (the default: `savetool serve` is `savetool serve run`).",
            discussion: """
                Prints the address it listens on, then one access-log line per request on stderr \
                (method, space, slot, status, bytes, milliseconds, device; never a token or a body). \
                SIGTERM or SIGINT stops it after the requests in flight.

                Examples:
                  savetool serve run --store /var/lib/savetool/sync --port 8787
                  savetool serve run --store s3://saves/sync --tokens tokens.json --host 0.0.0.0
                  savetool serve run --store sync --tokens tokens.json --tls-cert cert.pem --tls-key key.pem
                """)

        @OptionGroup var global: GlobalOptions

        @Option(help: ArgumentHelp("Where versions are kept: a directory, or s3://bucket/prefix (credentials and endpoint from AWS_* variables).", valueName: "dir|s3://…"), transform: PathArgument.named)
        var store: String

        @Option(help: ArgumentHelp("The address and port to listen on, in one ([::1]:8787 for IPv6); or give --host and --port.", valueName: "host:port"))
        var listen: String?

        @Option(help: ArgumentHelp("The address to listen on (127.0.0.1 unless given).", valueName: "address"))
        var host: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("The port to listen on, 8787 unless given; 0 picks a free one (printed).", valueName: "port"))
        var port: Int?

        /// Where to listen: `--listen`, or `--host` and `--port`, or 127.0.0.1:8787.
        var address: (host: String, port: Int) {
            get throws {
                guard let listen else { return (host ?? "127.0.0.1", port ?? 8787) }
                guard host == nil, port == nil else { throw ValidationError("--listen with --host or --port, expected one or the other") }
                // The last colon ends the host: an IPv6 address is written in brackets.
                guard let colon = listen.lastIndex(of: ":"), let number = Int(listen[listen.index(after: colon)...]), (0...65535).contains(number) else {
                    throw ValidationError("--listen \(listen), expected host:port, such as 127.0.0.1:8787 or [::1]:8787")
                }
                var host = String(listen[..<colon])
                // Brackets around an IPv6 address, both or neither; without them no colon.
                let bracketed = host.hasPrefix("[") && host.hasSuffix("]") && host.count > 2
                if bracketed { host = String(host.dropFirst().dropLast()) }
                guard !host.isEmpty, bracketed || (!host.contains(":") && !host.contains("[") && !host.contains("]")) else {
                    throw ValidationError("--listen \(listen), expected host:port, such as 127.0.0.1:8787 or [::1]:8787")
                }
                return (host, number)
            }
        }

        @Option(help: ArgumentHelp("The tokens file (see `savetool serve token add`).", valueName: "file"), transform: PathArgument.named)
        var tokens: String?

        @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.", valueName: "file"), transform: PathArgument.named)
        var tlsCert: String?

        @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "file"), transform: PathArgument.named)
        var tlsKey: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("The largest body taken, in bytes; larger ones are refused with 413.", valueName: "bytes"))
        var maxBody = 16 << 20

        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds a request's body may take to arrive (then 408); an idle connection is closed 2 s later.", valueName: "seconds"))
        var timeout = 30

        @Option(parsing: .unconditional, help: ArgumentHelp("Connections served at once; more wait.", valueName: "count"))
        var maxConnections = 512

        @Option(help: ArgumentHelp("Once a day, every slot's head into a bundle here: a directory, or s3://bucket/prefix.", valueName: "dir|s3://…"), transform: PathArgument.named)
        var backupRepo: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("Days of head bundles kept in --backup-repo.", valueName: "days"))
        var keepBackups = 7

        @Option(parsing: .unconditional, help: ArgumentHelp("Versions kept per slot (never the head, each recent day's last, parked pushes for 30 days); 0 keeps all.", valueName: "count"))
        var keepVersions = 100

        func validate() throws {
            if let port, !(0...65535).contains(port) { throw ValidationError("--port \(port), expected 0 to 65535") }
            _ = try address
            guard maxBody > 0, timeout > 0, maxConnections > 0, keepBackups > 0, keepVersions >= 0 else {
                throw ValidationError("--max-body, --timeout, --max-connections and --keep-backups must be above 0, --keep-versions at least 0")
            }
            guard (tlsCert == nil) == (tlsKey == nil) else {
                throw ValidationError(tlsCert == nil ? "--tls-key without --tls-cert, expected both" : "--tls-cert without --tls-key, expected both")
            }
        }

        func run() throws {
            let configuration = try Failure.reporting {
                let storage: any SaveStorage
                if S3Location.isRemote(store) {
                    storage = S3Storage(try S3Location(parsing: store), environment: try AWSEnvironment.current())
                    // A missing bucket or refused credentials stop the start (66, 77), as a
                    // missing folder does; a store that does not answer yet is waited for, with
                    // 503s meanwhile. Listing a name no object has asks without reading anything.
                    do {
                        _ = try storage.list(prefix: ".savetool-start-check")
                    } catch let error as SaveError where error.category == .busy || error.category == .io {
                        global.warn("\(error); requests that need the store are answered 503 until it answers")
                    }
                } else {
                    var info = stat()
                    guard stat(store, &info) == 0 else {
                        throw SaveError(.notFound, file: store, "no such folder, expected the folder versions are kept in")
                    }
                    guard info.st_mode & S_IFMT == S_IFDIR else {
                        throw SaveError(.notFound, file: store, "\(FileIO.describeType(info.st_mode)), expected the folder versions are kept in")
                    }
                    storage = LocalFolderStorage(directory: store)
                }
                var configuration = SyncServerConfiguration(
                    storage: storage, tokens: try tokens.map { try TokenList(file: $0) }, kinds: try global.kinds(), registry: global.registry())
                let (host, port) = try address
                (configuration.host, configuration.port, configuration.maxBody) = (host, port, maxBody)
                configuration.tokensFile = tokens
                // A body that stalls gets its 408 before the connection is given up as idle.
                configuration.bodyTimeout = .seconds(timeout)
                configuration.idleTimeout = .seconds(Int64(timeout) + 2)
                configuration.maxConnections = maxConnections
                configuration.keepVersions = keepVersions > 0 ? keepVersions : nil
                if let tlsCert, let tlsKey { configuration.tls = ServerTLS(certificateChain: tlsCert, privateKey: tlsKey) }
                if let backupRepo {
                    if S3Location.isRemote(backupRepo) {
                        let storage = S3Storage(try S3Location(parsing: backupRepo), environment: try AWSEnvironment.current())
                        // As for --store: a missing bucket or refused credentials stop the start,
                        // rather than leave a server whose daily backups all fail.
                        do {
                            _ = try storage.list(prefix: ".savetool-start-check")
                        } catch let error as SaveError where error.category == .busy || error.category == .io {
                            global.warn("\(error); the daily backups are tried again until it answers")
                        }
                        configuration.backups = .remote(RemoteRepository(storage: storage, createdBy: "savetool serve"))
                    } else {
                        configuration.backups = .folder(BackupRepository(directory: backupRepo))
                    }
                    configuration.keepBackups = keepBackups
                }
                let quiet = global.quiet
                configuration.accessLog = { line in if !quiet { Console.error(line) } }
                if configuration.tokens == nil, !configuration.isLoopback {
                    throw ValidationError("listening on \(host) without --tokens, expected a tokens file (savetool serve token add) or a loopback address (127.0.0.1)")
                }
                return configuration
            }
            let failure = ServerRun()
            let done = DispatchSemaphore(value: 0)
            Task {
                do {
                    let open = tokens == nil, host = configuration.host
                    let app = try SyncServer.buildApplication(configuration) { port in
                        if open { Console.error("savetool: no --tokens: anyone on this machine may read and push; listening on \(host) only") }
                        // An IPv6 address is written in brackets in a URL.
                        let shown = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
                        Console.output("savetool serve: listening on \(configuration.tls == nil ? "http" : "https")://\(shown):\(port)\n")
                    }
                    try await app.runService()
                } catch {
                    failure.error = SyncServer.explainStartFailure(error, host: configuration.host, port: configuration.port)
                }
                done.signal()
            }
            done.wait()
            if let error = failure.error { _ = try Failure.reporting { throw error } }
        }
    }

    struct TokenAdd: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Add a token to a tokens file; the token is printed once, only its hash is kept.",
            discussion: """
                Example:
                  savetool serve token add --tokens tokens.json --spaces 'blocks/*' --access write --name qa-farm
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: ArgumentHelp("add", valueName: "add"))
        var action: String

        @Option(help: ArgumentHelp("The tokens file; made when missing.", valueName: "file"), transform: PathArgument.named)
        var tokens: String

        @Option(parsing: .upToNextOption, help: ArgumentHelp("The spaces it reaches, as patterns (* matches anything, / included).", valueName: "pattern"))
        var spaces: [String]

        @Option(help: ArgumentHelp("What it may do: read, write (push) or admin (restore, force).", valueName: "access"))
        var access: TokenList.Access = .write

        @Option(help: ArgumentHelp("A name for people (the operator's).", valueName: "name"))
        var name: String?

        func validate() throws {
            guard action == "add" else { throw ValidationError("unknown action '\(action)', expected add") }
            guard !spaces.isEmpty else { throw ValidationError("missing --spaces, expected the spaces the token reaches") }
            if let problem = spaces.lazy.compactMap(TokenList.problem(ofPattern:)).first { throw ValidationError("--spaces: \(problem)") }
            if name?.isEmpty == true { throw ValidationError("--name '', expected a name for people to tell the token by") }
        }

        func run() throws {
            let token = try Failure.reporting(file: tokens) {
                let existing = Glibc.access(tokens, F_OK) == 0 ? try TokenList(file: tokens) : TokenList(entries: [])
                // A name tells tokens apart in the file and in the access log: two alike could not be.
                if let name, existing.entries.contains(where: { $0.name == name }) {
                    throw SaveError(.usage, file: tokens, "a token named \"\(name)\" is there already, expected a name of its own")
                }
                let made = TokenList.make(name: name ?? "token \(existing.entries.count + 1)", spaces: spaces, access: access)
                let list = TokenList(entries: existing.entries + [made.entry])
                try FileIO.writeAtomically(list.json, to: tokens, mode: 0o600, links: .follow)
                return made.token
            }
            Console.output(token + "\n")
        }
    }
}

extension TokenList.Access: ExpressibleByArgument {}

/// Carries the server's error out of its task.
private final class ServerRun: @unchecked Sendable {
    var error: (any Error)?
}
