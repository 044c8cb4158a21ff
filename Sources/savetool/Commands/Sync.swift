import ArgumentParser
import Foundation
import SaveKit
import SaveSync
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#endif

struct Sync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync save files with a sync server (savetool serve): push changes, merge, pull.",
        discussion: """
            Each file is a slot of the space: a file given alone is the slot named by its file \
            name (or --slot); in a folder, each file's path in it is its slot. savetool \
            remembers the version each file last synced, in .savetool-sync/ in the folder (or \
            beside the file):
              - changed since: pushed with that version as its base; the server stores it, or \
            merges it with what other devices pushed since, by the kind's merge rules, and \
            the merged save is written here (in the file's own codec);
              - unchanged: the server's newer head, if any, is written here;
              - never synced: pushed as the slot's first version, or merged with the slot \
            that another device made;
              - on the server only (a folder's sync): pulled as a new file, unless it was \
            synced here before and deleted since.
            Files are replaced atomically. On a conflict the conflicts are printed, the file \
            is left as it was, and the exit code is 1; the server keeps the push.

            Exit codes: 1 a conflict; 64 a wrong option or name; 65 the server refused a file \
            as bad data; 66 the file or folder is missing; 73 a file cannot be written here (a \
            link leading out of the folder, or something else where a pulled save goes); 75 \
            the server could not be reached or failed, after a few tries; 77 the token was \
            refused, or the server's certificate is not trusted. A server that cannot be \
            reached, a refused token or an untrusted certificate leaves the rest of a folder \
            for the next sync. In a folder, files no slot can hold (a name with a space, a \
            file that is not JSON or a property list) are left out, each said on its line; \
            a file synced before is never left out.

            Examples:
              savetool sync kape --server https://saves.example.com --space kape/player-42 --token-file ~/.savetool-token
              savetool sync kape --server https://qa:8443 --cacert qa.pem --space kape/p-42
              savetool sync kape --server https://saves.example.com --space kape/player-42 --take-server   # after a conflict: the server's copy
              savetool sync com.example.blocks.plist --server http://127.0.0.1:8787 --space blocks/player-42 --slot Library/Preferences/com.example.blocks.plist
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("A save file, or a folder of them.", valueName: "file|dir"), transform: PathArgument.named)
    var path: String

    @Option(help: ArgumentHelp("The server: http://host:port or https://host.", valueName: "url"))
    var server: String

    @Option(help: ArgumentHelp("The space (one account of one app), such as blocks/player-42.", valueName: "space"))
    var space: String

    @Option(help: ArgumentHelp("The slot of a single file (default: its file name).", valueName: "slot"))
    var slot: String?

    @Option(help: ArgumentHelp("A file holding the token (Authorization: Bearer).", valueName: "file"), transform: PathArgument.named)
    var tokenFile: String?

    @Option(help: ArgumentHelp("This device's name, for the server's history (default: the host name and this folder's own mark, kept in .savetool-sync/device-id).", valueName: "name"))
    var device: String?

    @Option(help: ArgumentHelp("Trust the certificates in this PEM file for an https server, instead of the system's CAs (a private CA, or a self-signed server).", valueName: "file"), transform: PathArgument.named)
    var cacert: String?

    @Flag(help: "On a conflict, take the server's version: written over the file once the server has kept this copy (parked), so nothing is lost.")
    var takeServer = false

    func run() throws {
        var worst: Int32 = 0
        try Failure.reporting {
            let token = try tokenFile.map { file -> String in
                let text = String(decoding: try FileIO.read(file), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard !text.isEmpty else { throw SaveError(.usage, file: file, "an empty token file, expected the token") }
                return text
            }
            // The arguments are checked before anything is written (the state folder below); the
            // kinds are loaded once, for both clients.
            let (registry, kinds) = (global.registry(), try global.kinds())
            func makeClient(device: String) throws -> SyncClient {
                try SyncClient(
                    server: server, space: space, token: token, device: device, registry: registry, kinds: kinds, trustedCertificates: cacert,
                    takesServerCopyOnConflict: takeServer)
            }
            let named = try makeClient(device: device ?? ProcessInfo.processInfo.hostName)
            var info = stat()
            guard stat(path, &info) == 0 else { throw SaveError(.notFound, file: path, FileError.reason(errno)) }
            let isFolder = info.st_mode & S_IFMT == S_IFDIR
            if !isFolder, slot == nil, path.hasSuffix("/") { throw SaveError(.usage, file: path, "not a folder") }
            guard isFolder || info.st_mode & S_IFMT == S_IFREG else { throw SaveError(.usage, file: path, "not a file or folder") }
            if isFolder, slot != nil { throw SaveError(.usage, "--slot names the slot of one file, expected a file rather than a folder") }
            let name = String(path.split(separator: "/").last ?? Substring(path))
            // A file synced alone that a folder sync remembers keeps that base (and device mark),
            // and without --slot that slot: by its name alone it would be a second slot of one save.
            let remembered = isFolder ? nil : SyncState.remembering(file: path, slot: slot, space: named.space, server: named.server)
            let folder = isFolder ? path : remembered?.folder ?? FileIO.parentDirectory(of: path)
            var state = try SyncState(folder: folder)
            try state.prepare()
            let client = device != nil ? named : try makeClient(device: ProcessInfo.processInfo.hostName + "-" + state.deviceMark())
            var files: [(file: String, key: String, slot: String)] = []
            // Folders that cannot be read: each an error, and no slot is pulled into such a
            // folder. A name that is not UTF-8 is left out, as every name no slot can hold is.
            var unlisted: [(file: String, relative: String, problem: String)] = []
            var unnamable: [(file: String, problem: String)] = []
            if isFolder {
                // The walk skips names starting with `.`: the state folder among them.
                try FileWalk(paths: [path]).forEach { file in
                    if let problem = file.problem, file.nameIsNotUTF8 {
                        unnamable.append((file.path, problem))
                    } else if let problem = file.problem {
                        unlisted.append((file.path, file.relative, problem))
                    } else {
                        files.append((file.path, file.relative, file.relative))
                    }
                    return true
                }
            } else {
                files = [(path, remembered?.key ?? name, slot ?? remembered?.slot ?? name)]
            }
            var refused = false
            func attempt(_ file: String, _ body: () throws -> SyncClient.Outcome?) {
                do {
                    guard let outcome = try body() else { return }
                    report(outcome)
                    if outcome.action == .conflict { worst = max(worst, Failure.Code.negative) }
                } catch {
                    let code = Failure.report(error, file: file)
                    // Said on standard output too, so that a program reading it sees every file.
                    if global.json { jsonLine([("file", .string(file)), ("action", .string("failed")), ("exitCode", .integer(Int64(code))),
                                               ("error", .string(Failure.describe(error, file: file).message))]) }
                    worst = worst == 0 || worst == Failure.Code.negative ? code : max(worst, code)
                    // A refused token, an untrusted server or one that does not answer refuses
                    // every other file alike: each would wait through the same tries.
                    refused = (error as? any CategorizedError)?.category == .permissionDenied || (error as? SaveError)?.cause is SyncClient.Unreachable
                }
            }
            for (file, _, problem) in unlisted {
                attempt(file) { throw SaveError(.notFound, file: file, problem) }
            }
            for (file, problem) in unnamable {
                attempt(file) { .leftOut(file, reason: problem) }
            }
            for (file, key, slot) in files where !refused {
                attempt(file) {
                    var entry = state.entries[key]
                    // Synced before elsewhere (another slot, space or server): said, since its
                    // base is then forgotten and the next push is merged without one.
                    if let old = entry, old.server != client.server || old.space != client.space || old.slot != slot {
                        global.warn("\(file): last synced as \(old.slot) in \(old.space) on \(old.server); as \(slot) in \(client.space) on \(client.server) it starts over, merged without a base")
                    }
                    func remember(_ entry: SyncState.Entry?) throws {
                        state.entries[key] = entry
                        try state.save()
                    }
                    let outcome = try client.sync(
                        file: file, slot: slot, entry: &entry, links: isFolder ? .followWithin(folder) : .follow, leavingOut: isFolder, remember: remember)
                    if let entry { state.entries[key] = entry }
                    try state.save()
                    return outcome
                }
            }
            // A folder also gets the space's slots it has no file for: a new device's empty
            // folder fills. A slot synced here before whose file is gone was deleted here, and
            // stays deleted; a slot that a folder walk would not see (a name starting with `.`)
            // is left on the server.
            if isFolder && !refused {
                let here = Set(files.map(\.key))
                var slots: [String] = []
                attempt(path) { slots = try client.slots(); return nil }
                let unreadable = unlisted.map(\.relative)
                func insideUnreadable(_ slot: String) -> Bool {
                    unreadable.contains { $0.isEmpty || slot == $0 || slot.hasPrefix($0 + "/") }
                }
                for slot in slots where !here.contains(slot) && !refused && !slot.split(separator: "/").contains(where: { $0.hasPrefix(".") }) && !insideUnreadable(slot) {
                    let file = (path.hasSuffix("/") ? path : path + "/") + slot
                    if let synced = state.entries[slot], synced.server == client.server, synced.space == client.space {
                        if global.json {
                            jsonLine([("file", .string(file)), ("slot", .string(slot)), ("action", .string("deletedHere")), ("version", .integer(Int64(synced.version)))])
                        } else if !global.quiet {
                            Console.outputLines(["\(file): deleted here since version \(synced.version); left deleted (the server keeps the slot)"])
                        }
                        continue
                    }
                    attempt(file) {
                        var entry: SyncState.Entry?
                        let outcome = try client.pull(slot: slot, to: file, in: path, entry: &entry)
                        state.entries[slot] = entry
                        try state.save()
                        return outcome
                    }
                }
            }
        }
        if worst != 0 { throw ExitCode(worst) }
    }

    /// What the server made of a push it migrated, said where the push is.
    private static func migrated(_ outcome: SyncClient.Outcome) -> String {
        outcome.migratedTo.map { "; the server migrated it (\($0)), written here" } ?? ""
    }

    /// One line of `--json`: an object of `fields`, in order.
    private func jsonLine(_ fields: [(String, SaveValue)]) {
        if let line = try? Console.jsonLine(.dictionary(.init(uniqueKeysWithValues: fields))) { Console.output(line) }
    }

    private func report(_ outcome: SyncClient.Outcome) {
        if global.json {
            var fields: [(String, SaveValue)] = [
                ("file", .string(outcome.file)), ("slot", .string(outcome.slot)), ("action", .string(outcome.action.rawValue)),
                ("version", .integer(Int64(outcome.version))),
            ]
            if outcome.decisions > 0 { fields.append(("decisions", .integer(Int64(outcome.decisions)))) }
            if outcome.sincePush { fields.append(("sincePush", .bool(true))) }
            if !outcome.conflicts.isEmpty { fields.append(("conflicts", .array(outcome.conflicts))) }
            if let parked = outcome.parked { fields.append(("parked", .string(parked))) }
            if let reason = outcome.reason { fields.append(("reason", .string(reason))) }
            if let migrated = outcome.migratedTo { fields.append(("migratedTo", .string(migrated))) }
            jsonLine(fields)
            return
        }
        // A conflict, and a file given up for the server's copy, are said even under --quiet.
        guard !global.quiet || outcome.action == .conflict || outcome.action == .tookServerCopy else { return }
        let line: String
        switch outcome.action {
        case .upToDate: line = "\(outcome.file): up to date (version \(outcome.version))"
        case .created: line = "\(outcome.file): pushed as the slot's first version\(Self.migrated(outcome))"
        case .pushed: line = "\(outcome.file): pushed, version \(outcome.version)\(Self.migrated(outcome))"
        case .merged where outcome.sincePush:
            // The app saved again while the file synced: merged here, then pushed on top.
            let decisions = "\(outcome.decisions) decision\(outcome.decisions == 1 ? "" : "s")"
            line = "\(outcome.file): saved again while it synced; its new changes merged here with the server's copy (\(decisions)), now version \(outcome.version) there"
        case .merged:
            let decisions = "\(outcome.decisions) decision\(outcome.decisions == 1 ? "" : "s"): the server's history has them"
            line = outcome.unchangedHere
                ? "\(outcome.file): merged with other devices' changes, version \(outcome.version), which is this file as it is (\(decisions))"
                : "\(outcome.file): merged with other devices' changes, version \(outcome.version) written here (\(decisions))"
        case .pulled: line = "\(outcome.file): pulled version \(outcome.version)"
        case .tookServerCopy:
            line = "\(outcome.file): conflict settled by taking version \(outcome.version) from the server; this copy is kept there as \(outcome.parked ?? "a parked push")"
        case .leftOut: line = "\(outcome.file): left out: \(outcome.reason ?? "no slot can hold it")"
        case .conflict:
            var text = outcome.sincePush
                ? "\(outcome.file): its changes since its last push (which the server took) conflict with version \(outcome.version) on the server; the file is left as it was"
                : "\(outcome.file): conflict with version \(outcome.version) on the server; the file is left as it was"
            if let parked = outcome.parked { text += " (the server keeps the push as \(parked))" }
            if takeServer && outcome.parked == nil { text += "; not taken from the server: these changes are kept nowhere else" }
            // A line for each place (standard error keeps each line on one line).
            var lines = [text]
            for conflict in outcome.conflicts {
                let fields = conflict.dictionaryValue ?? [:]
                let shown = { (key: String) in fields[key].map { $0.compactText } ?? "(none)" }
                let pointer = fields["pointer"]?.stringValue ?? ""
                let place = pointer.isEmpty ? "the whole file" : pointer
                var line = fields["pushed"] == nil && fields["head"] == nil && fields["base"] == nil
                    ? "  \(place): changed on both sides"  // a file no kind reads value by value
                    : "  \(place): here \(shown("pushed")), on the server \(shown("head")), before \(shown("base"))"
                if let why = fields["why"]?.stringValue { line += " — \(why)" }
                lines.append(line)
            }
            lines.forEach(Console.error)
            return
        }
        Console.outputLines([line])  // on one line, whatever the name holds
    }
}
