import ArgumentParser
import Foundation
import SaveArchive
import SaveKit
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#endif

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge two copies of a save that diverged, by its kind's merge rules.",
        discussion: """
            The copies may be files (in any codec), save folders or bundles. Each file is \
            recognised, both copies (and the base) are migrated to the kind's current version, \
            and they are merged by the kind's merge.json: with a base (--base, the copy both \
            started from; a backup bundle is a natural one), a value changed on one side only \
            is taken as it is, and only values changed on both sides reach a rule; without one, \
            every difference does. Documents held inside others (a JSON save in a plist's data) \
            are merged by their own kind's rules. The result keeps the local copy's codec and \
            key order, and in JSON its text: only the merged values are written again, so git \
            shows only the lines the merge changed. Every decision is printed: the place, the \
            policy, the value kept and why.

            A conflict is what no rule decides: a value both sides changed whose rule is ask, a \
            counter without a base, a value removed on one side and changed on the other, two \
            different files no kind recognises. Conflicts are settled by --answers (a file of \
            answers; the --report of a stopped merge lists what to answer), by --prefer, or by \
            a question on a terminal. With any conflict left the merge writes nothing and \
            exits 1.

            The output (-o) is a new file, folder or bundle, or the local copy itself; what it \
            replaces is first kept in a new bundle beside it, \
            <name>-before-merge-<time>.tar.gz: a merge never destroys the losing copy.

            As a git merge driver: savetool merge --git %O %A %B %P writes the result into %A \
            and exits 0, or exits 1 on conflicts (see docs/merge.md).

            Examples:
              savetool merge --local phone --remote tablet --base backups/phone-2026-11-22.tar.gz -o merged
              savetool merge --local save.plist --remote other/save.plist -o save.plist --prefer local
              savetool merge --local a.json --remote b.json --base old.json --dry-run --report merge.json
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("This device's copy: a file, a save folder or a bundle.", valueName: "path"), transform: PathArgument.named)
    var local: String?

    @Option(help: ArgumentHelp("The other copy, of the same shape.", valueName: "path"), transform: PathArgument.named)
    var remote: String?

    @Option(help: ArgumentHelp("The copy both started from; without it, every difference reaches a rule.", valueName: "path"), transform: PathArgument.named)
    var base: String?

    @Option(help: ArgumentHelp("Merge as this kind instead of recognising it.", valueName: "kind"))
    var kind: String?

    @Option(name: [.customShort("o"), .customLong("output")], help: ArgumentHelp("Where the merged copy goes: a new path, or the local copy.", valueName: "path"), transform: PathArgument.named)
    var output: String?

    @Option(help: ArgumentHelp("Settle every conflict left with this side.", valueName: "local|remote"))
    var prefer: Side?

    @Option(help: ArgumentHelp("Answers to conflicts (savetool.merge-answers/1).", valueName: "file"), transform: PathArgument.named)
    var answers: String?

    @Option(help: ArgumentHelp("Write every decision to this JSON file.", valueName: "file"), transform: PathArgument.named)
    var report: String?

    @Flag(help: "Merge and report, but write nothing.")
    var dryRun = false

    @Flag(help: "Act as a git merge driver: the arguments are %O %A %B and, optionally, %P.")
    var git = false

    @Argument(help: ArgumentHelp("With --git: the base, the local copy (and result), the remote copy, the file's path.", valueName: "git-file"))
    var gitFiles: [String] = []

    enum Side: String, ExpressibleByArgument, CaseIterable {
        case local, remote
    }

    func validate() throws {
        // Read from the process's own arguments: ArgumentParser keeps only the last.
        let single = [["--local"], ["--remote"], ["--base"], ["-o", "--output"], ["--kind"], ["--prefer"], ["--answers"], ["--report"]]
        if let repeated = CommandLineText.repeatedOption(of: single, in: CommandLineText.arguments()) {
            throw ValidationError(["--local", "--remote", "--base"].contains(repeated)
                ? "\(repeated) given more than once, expected one copy each; to merge a third device's copy, merge it into the result in turn, with the same --base"
                : "\(repeated) given more than once, expected it once")
        }
        if git {
            guard (3...4).contains(gitFiles.count) else { throw ValidationError("--git takes %O %A %B and optionally %P, expected 3 or 4 paths") }
            guard local == nil, remote == nil, base == nil, output == nil else {
                throw ValidationError("--git takes its copies as %O %A %B, expected no --local, --remote, --base or --output")
            }
        } else {
            if let stray = gitFiles.first {
                // `--null drop`: the value of an option merge does not have is taken for a path.
                let arguments = CommandLineText.arguments()
                if let index = arguments.lastIndex(of: stray), index > 0, arguments[index - 1].hasPrefix("-"), arguments[index - 1].count > 1 {
                    throw ValidationError("unknown option '\(arguments[index - 1])' (with '\(stray)')")
                }
                throw ValidationError("unexpected argument '\(stray)'; the copies are given with --local and --remote")
            }
            guard local != nil, remote != nil else { throw ValidationError("missing --local or --remote, expected both copies") }
            guard output != nil || dryRun else { throw ValidationError("missing --output, expected where the merged copy goes (or --dry-run)") }
        }
    }

    func run() throws {
        let outcome = try Failure.reporting {
            let (baseCopy, localCopy, remoteCopy) = git ? (gitFiles[0], gitFiles[1], gitFiles[2]) : (base, local!, remote!)
            let given = try answers.map { path in
                let document: SaveValue
                do { document = try JSONCodec().decode(try FileIO.read(path)) } catch let error as CodecError {
                    throw SaveError(.badData, file: path, error.description, cause: error)
                }
                do { return try MergeAnswers(parsing: document) } catch let error as FormatDefinitionError { throw SaveError(.badData, file: path, location: error.at.displayText, error.message) }
            }
            let asks = given == nil && prefer == nil && !git && !global.json && isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1
            let prefer = self.prefer
            let used = UsedAnswers(), misfits = Misfits()
            let resolve: @Sendable (String, MergeConflict) -> (resolution: ConflictResolution, by: String)? = { file, conflict in
                if let given, let index = given.answerIndex(file: file, path: conflict.path) {
                    // A whole file is taken from a side, never given as a value: such an answer
                    // settles nothing, and is said to.
                    let named = given.answers[index].file.map { " in \($0)" } ?? ""
                    if conflict.isWholeFile, case .value = given.answers[index].resolution {
                        misfits.insert(index, "a value for the whole file\(named), expected \"take\": \"local\", \"remote\" or \"base\" (a whole file is taken from a copy)")
                    } else if case .value(let value) = given.answers[index].resolution, let problem = conflict.problem(with: value) {
                        misfits.insert(index, "a value for the group at \(conflict.path.displayText)\(named): \(problem)")
                    } else {
                        used.insert(index)
                        return (given.answers[index].resolution, "an answer")
                    }
                }
                if let prefer { return (.take(prefer == .local ? .local : .remote), "--prefer \(prefer.rawValue)") }
                return asks ? Self.ask(file: file, conflict) : nil
            }
            let merger = try SaveMerger(kinds: global.kinds(), registry: global.registry(), kind: kind)
            var tree = TreeMerger(merger: merger, resolve: resolve)
            if asks { tree.jobs = 1 }  // one question at a time
            var job = MergeJob(tree: tree, createdBy: "savetool \(SaveTool.version)")
            job.dryRun = dryRun
            job.keepsOriginals = !git
            job.isGitDriver = git
            if git, gitFiles.count == 4 { job.recognitionPath = gitFiles[3] }
            try MergeJob.checkPlaces(base: baseCopy, local: localCopy, remote: remoteCopy, output: git ? nil : output, report: report)
            var collected = MergeReport()
            // Opened first: a report that cannot be written stops the merge before the merged
            // copy is, never after (it is committed once the merge is done).
            let reportOutput = try report.map { path throws(FileError) in try AtomicFileOutput(path: path, links: .follow) }
            let printing = !global.quiet && !global.json
            let outcome = try job.run(base: baseCopy, local: localCopy, remote: remoteCopy, output: git ? gitFiles[1] : output ?? localCopy) { file in
                if report != nil || global.json { collected.add(file) }
                if printing { Self.print(file) }
            }
            if let reportOutput {
                var options = EncodingOptions()
                options.pretty = true
                try JSONCodec().encode(collected.value, options: options).withUnsafeBytes { try reportOutput.write($0) }
                try reportOutput.commit()
            }
            if global.json { try Console.outputJSON(collected.value) }
            // Under git, %A is a temporary name of git's own: the file is named by its path, %P.
            let shown = git ? (gitFiles.count == 4 ? gitFiles[3] : gitFiles[1]) : output
            if printing { Console.output(Self.summary(outcome, output: shown, dryRun: dryRun)) }
            if let kept = outcome.keptOriginals, !global.quiet { Console.error("savetool: the copy it replaced is kept in \(kept)") }
            // Answers that settled nothing are errors in the answers file: said under -q too.
            if let given, let answers {
                for (index, answer) in given.answers.enumerated() where !used.contains(index) {
                    let file = answer.file.map { " in \($0)" } ?? ""
                    if let problem = misfits[index] {
                        Console.error("savetool: \(answers):/answers/\(index): \(problem); this answer settled nothing")
                        continue
                    }
                    Console.error("savetool: \(answers):/answers/\(index): no conflict at \(answer.path.displayText)\(file), expected a conflict's pointer as --report lists it; this answer settled nothing")
                }
            }
            return outcome
        }
        if outcome.conflicts > 0 {
            // An error, said under -q too: exit 1 alone does not say that nothing was written.
            let left = "savetool: \(outcome.conflicts) conflict\(outcome.conflicts == 1 ? "" : "s") left, nothing written; "
            // git passes no flags of ours: its own ways are the ones to name there.
            Console.error(left + (git
                ? "git keeps our copy and marks the file in conflict: edit it (savetool set) and git add it, or take a side with git checkout --ours or --theirs"
                : prefer == nil
                    ? "settle them with --answers (the conflicts of --report are what to answer) or --prefer local|remote"
                    // What --prefer cannot settle: a place where the side it takes still breaks the schema.
                    : "--prefer cannot settle these: the merged save would break its kind's schema there with the value taken; answer them with --answers, with values the schema takes (--report lists them)"))
            throw ExitCode(Failure.Code.negative)
        }
    }

    private static func print(_ file: TreeMerger.FileOutcome) {
        guard !file.decisions.isEmpty else { return }
        var lines = [file.path + (file.kind.map { " (\($0))" } ?? "")]
        for decision in file.decisions {
            let place = decision.path.isRoot ? "the whole file" : decision.path.displayText
            if decision.isConflict {
                let sides = [("local", decision.local), ("remote", decision.remote), ("base", decision.base)]
                    .compactMap { name, value in value.map { "\(name) \(short($0))" } }
                lines.append("  conflict at \(place): \(decision.why)" + (sides.isEmpty ? "" : " (\(sides.joined(separator: ", ")))"))
            } else {
                // A whole document or subtree taken from one side is named by its side, not shown.
                let result = decision.result.flatMap { $0.isContainer && $0.compactText.count > 60 ? nil : " → \(short($0))" } ?? ""
                lines.append("  \(place): \(decision.policy)\(result), \(decision.why)")
            }
        }
        Console.outputLines(lines)  // a name or key holding a newline stays on its line
    }

    private static func summary(_ outcome: MergeJob.Outcome, output: String?, dryRun: Bool) -> String {
        let files = "\(outcome.files) file\(outcome.files == 1 ? "" : "s")"
        let conflicts = "\(outcome.conflicts) conflict\(outcome.conflicts == 1 ? "" : "s")"
        let written = outcome.wrote ? "; written to \(output ?? "")" : dryRun ? "; nothing written (dry run)" : outcome.conflicts > 0 ? "; nothing written" : "; nothing to write"
        return "\(files) merged, \(outcome.changed) different from the local copy, \(conflicts)\(written)\n"
    }

    private static func short(_ value: SaveValue) -> String {
        let text = value.compactText
        return text.count > 80 ? String(text.prefix(77)) + "…" : text
    }

    /// A conflict asked on the terminal: local, remote, base, or left open.
    private static func ask(file: String, _ conflict: MergeConflict) -> (resolution: ConflictResolution, by: String)? {
        let place = conflict.path.isRoot ? "the whole file" : conflict.path.description
        var prompt = "\(file): conflict at \(place): \(conflict.reason)\n"
        for (name, value) in [("local", conflict.local), ("remote", conflict.remote), ("base", conflict.base)] {
            if let value { prompt += "  \(name): \(short(value))\n" }
        }
        let choices = conflict.base == nil ? "[l]ocal, [r]emote, or Enter to leave it" : "[l]ocal, [r]emote, [b]ase, or Enter to leave it"
        FileHandle.standardError.write(Data((prompt + "Keep which? \(choices): ").utf8))
        switch readLine()?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "l", "local": return (.take(.local), "the answer on the terminal")
        case "r", "remote": return (.take(.remote), "the answer on the terminal")
        case "b" where conflict.base != nil, "base" where conflict.base != nil: return (.take(.base), "the answer on the terminal")
        default: return nil
        }
    }
}

/// The answers that settled a conflict, gathered from merges that may run on several threads.
/// Answers that matched a conflict but could not settle it, with why.
private final class Misfits: @unchecked Sendable {
    private let lock = NSLock()
    private var problems: [Int: String] = [:]

    func insert(_ index: Int, _ problem: String) { lock.withLock { problems[index] = problem } }
    subscript(index: Int) -> String? { lock.withLock { problems[index] } }
}

private final class UsedAnswers: @unchecked Sendable {
    private let lock = NSLock()
    private var indices: Set<Int> = []

    func insert(_ index: Int) { lock.withLock { _ = indices.insert(index) } }
    func contains(_ index: Int) -> Bool { lock.withLock { indices.contains(index) } }
}
