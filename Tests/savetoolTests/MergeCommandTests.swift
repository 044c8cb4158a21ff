import Foundation
import SaveKit
import TestSupport
import Testing

/// `savetool merge` as users run it: two device folders against a backup, a file merged in
/// place, conflicts that stop it, and git calling it as a merge driver.
@Suite("savetool merge")
struct MergeCommandTests {
    /// A device's save folder: the blocks defaults (a JSON save inside a binary plist), a sudoku
    /// game, a tournament and a file no kind knows.
    struct Device {
        let root: URL
        var path: String { root.path }

        init(_ root: URL) throws {
            self.root = root
            try FileManager.default.createDirectory(at: root.appendingPathComponent("Library/Preferences"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root.appendingPathComponent("Documents/games"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"), toPath: file("Library/Preferences/com.example.blocks.plist"))
            try FileManager.default.copyItem(atPath: CLI.sample("sudoku/Documents/games/v2-in-progress.json"), toPath: file("Documents/games/daily.json"))
            try FileManager.default.copyItem(atPath: CLI.tournament, toPath: file("Documents/current_tournament.json"))
            try Data("volume=3\n".utf8).write(to: root.appendingPathComponent("Documents/notes.txt"))
        }

        func file(_ relative: String) -> String { root.appendingPathComponent(relative).path }

        func set(_ relative: String, _ pointer: String, _ value: String) throws {
            let result = try CLI.run("set", file(relative), pointer, value)
            #expect(result.status == 0, "\(result.errors)")
        }

        func get(_ relative: String, _ pointer: String) throws -> String {
            try CLI.run("get", file(relative), pointer).outputText.trimmingCharacters(in: .newlines)
        }
    }

    @Test func twoDeviceFoldersWithABackupAsBase() throws {
        let root = try Processes.temporaryDirectory("merge-trees")
        defer { try? FileManager.default.removeItem(at: root) }
        let base = try Device(root.appendingPathComponent("base"))
        let backup = root.appendingPathComponent("base.tar.gz").path
        #expect(try CLI.run("export", base.path, "-o", backup).status == 0)
        let phone = try Device(root.appendingPathComponent("phone")), tablet = try Device(root.appendingPathComponent("tablet"))
        let blocks = "Library/Preferences/com.example.blocks.plist"
        try phone.set(blocks, "/gameSave/coins", "70")  // 40 → 70
        try tablet.set(blocks, "/gameSave/coins", "25")  // 40 → 25
        try tablet.set(blocks, "/gameSave/unlockedThemes/-", #""lava""#)
        try phone.set("Documents/games/daily.json", "/timer/elapsedSeconds", "400")
        try tablet.set("Documents/games/daily.json", "/completed", "true")
        try tablet.set("Documents/games/daily.json", "/timer/elapsedSeconds", "200")
        try Data("volume=5\n".utf8).write(to: tablet.root.appendingPathComponent("Documents/notes.txt"))
        try Data("new\n".utf8).write(to: phone.root.appendingPathComponent("Documents/phone-only.txt"))

        let merged = root.appendingPathComponent("merged").path, report = root.appendingPathComponent("report.json").path
        let result = try CLI.run("merge", "--local", phone.path, "--remote", tablet.path, "--base", backup, "-o", merged, "--report", report)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.outputText.contains("/gameSave/coins: counter → 55, the base plus both sides' changes"))
        #expect(result.outputText.hasSuffix("5 files merged, 3 different from the local copy, 0 conflicts; written to \(merged)\n"))
        let out = try Device.existing(URL(fileURLWithPath: merged))
        #expect(try out.get(blocks, "/gameSave/coins") == "55")
        #expect(try out.get(blocks, "/gameSave/unlockedThemes/4") == #""lava""#)
        #expect(try out.get("Documents/games/daily.json", "/completed") == "true", "the completed game wins whole")
        #expect(try out.get("Documents/games/daily.json", "/timer/elapsedSeconds") == "200")
        #expect(try String(contentsOfFile: out.file("Documents/notes.txt"), encoding: .utf8) == "volume=5\n", "changed on one side only")
        #expect(FileManager.default.fileExists(atPath: out.file("Documents/phone-only.txt")))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out.file(blocks))).prefix(8)) == Array("bplist00".utf8))

        // The report lists every decision, with the file, the place, the policy and why.
        let document = try Codecs.json.decode(Array(try Data(contentsOf: URL(fileURLWithPath: report))))
        #expect(document["format"] == "savetool.merge-report/1")
        #expect(document["conflicts"] == 0)
        let decisions = document["decisions"]?.arrayValue ?? []
        let summary = decisions.map { "\($0["file"]?.stringValue ?? "") \($0["path"]?.stringValue ?? "") \($0["policy"]?.stringValue ?? "")" }
        #expect(summary == [
            "Documents/games/daily.json  pickSide",
            "Documents/notes.txt  changedOnOneSide",
            "Documents/phone-only.txt  changedOnOneSide",  // added since the base: three-way, not onOneSideOnly
            "Library/Preferences/com.example.blocks.plist /gameSave/coins counter",
            "Library/Preferences/com.example.blocks.plist /gameSave/unlockedThemes changedOnOneSide",
        ])
        let coins = decisions.first { $0["path"] == "/gameSave/coins" }
        #expect(coins?["base"] == 40 && coins?["local"] == 70 && coins?["remote"] == 25 && coins?["result"] == 55)
        #expect(decisions.allSatisfy { ($0["why"]?.stringValue?.isEmpty ?? true) == false })

        // A name that is not UTF-8 stops the merge, named with its bytes, and nothing is written.
        let latin = try Processes.run(["python3", "-c", "import sys; open(sys.argv[1].encode() + b'/Documents/z\\xe9.txt', 'w').write('x')", tablet.path])
        #expect(latin.status == 0, "\(latin.errors)")
        let stopped = try CLI.run("merge", "--local", phone.path, "--remote", tablet.path, "--base", backup, "-o", merged + "-2")
        #expect(stopped.status == 65 && stopped.errors.hasPrefix("savetool: \(tablet.path)/Documents/z\\xE9.txt: a name that is not UTF-8"), "\(stopped.errors)")
        #expect(!FileManager.default.fileExists(atPath: merged + "-2"))
    }

    @Test func conflictsStopTheMergeUntilAnswered() throws {
        let root = try Processes.temporaryDirectory("merge-conflict")
        defer { try? FileManager.default.removeItem(at: root) }
        let phone = try Device(root.appendingPathComponent("phone")), tablet = try Device(root.appendingPathComponent("tablet"))
        let blocks = "Library/Preferences/com.example.blocks.plist"
        try phone.set(blocks, "/gameSave/coins", "70")
        try tablet.set(blocks, "/gameSave/coins", "25")
        let before = try Data(contentsOf: URL(fileURLWithPath: phone.file(blocks)))
        // No base: a counter changed on both sides cannot be added. Nothing is written.
        let stopped = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "-o", phone.file(blocks))
        #expect(stopped.status == 1)
        #expect(stopped.outputText.contains("conflict at /gameSave/coins: a counter changed on both sides, but without a base the two changes cannot be added (local 70, remote 25)"))
        #expect(stopped.errors.contains("1 conflict left, nothing written; settle them with --answers"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: phone.file(blocks))) == before)
        // The report of an open conflict gives both sides and no result (the local value only
        // stands in for one).
        let reportPath = root.appendingPathComponent("report.json").path
        _ = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "--dry-run", "--report", reportPath)
        let open = try Codecs.value(String(contentsOfFile: reportPath, encoding: .utf8))["decisions"]?.arrayValue?.first { $0["conflict"] == true }
        #expect(open?["local"] == 70 && open?["remote"] == 25 && open?["result"] == nil, "\(String(describing: open))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: phone.file("Library/Preferences")) == ["com.example.blocks.plist"])

        // An answer whose pointer matches no conflict is named, not silently dropped.
        let mistyped = root.appendingPathComponent("mistyped.json").path
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/gameSave/coinz", "take": "remote"}]}"#.utf8).write(to: URL(fileURLWithPath: mistyped))
        let unsettled = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "-o", phone.file(blocks), "--answers", mistyped)
        #expect(unsettled.status == 1)
        #expect(unsettled.errors.contains("savetool: \(mistyped):/answers/0: no conflict at /gameSave/coinz, expected a conflict's pointer as --report lists it; this answer settled nothing"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: phone.file(blocks))) == before)

        // Answered: the file is merged in place, and the copy it replaces is kept in a bundle.
        let answers = root.appendingPathComponent("answers.json").path
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/gameSave/coins", "take": "remote"}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let answered = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "-o", phone.file(blocks), "--answers", answers)
        #expect(answered.status == 0, "\(answered.errors)")
        #expect(try phone.get(blocks, "/gameSave/coins") == "25")
        let kept = try FileManager.default.contentsOfDirectory(atPath: phone.file("Library/Preferences")).filter { $0.contains("-before-merge-") }
        try #require(kept.count == 1)
        #expect(answered.errors.contains("the copy it replaced is kept in "))
        let restored = root.appendingPathComponent("restored").path
        #expect(try CLI.run("import", phone.file("Library/Preferences/" + kept[0]), "--into", restored, "--no-migrate").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: restored + "/com.example.blocks.plist")) == before, "the losing copy is never destroyed")

        // --prefer settles whatever is left.
        try tablet.set(blocks, "/gameSave/coins", "10")
        let preferred = try CLI.run("merge", "--local", tablet.file(blocks), "--remote", phone.file(blocks), "-o", root.appendingPathComponent("p.plist").path, "--prefer", "local")
        #expect(preferred.status == 0, "\(preferred.errors)")
        #expect(preferred.outputText.contains("settled by --prefer local"))
    }

    @Test func badInputIsNamedAndNothingIsWritten() throws {
        let root = try Processes.temporaryDirectory("merge-bad")
        defer { try? FileManager.default.removeItem(at: root) }
        let good = root.appendingPathComponent("good.json").path, bad = root.appendingPathComponent("bad.json").path
        try Data(#"{"a": 1}"#.utf8).write(to: URL(fileURLWithPath: good))
        try Data("{\"a\": 1,\n  oops}".utf8).write(to: URL(fileURLWithPath: bad))
        let out = root.appendingPathComponent("out.json").path
        let malformed = try CLI.run("merge", "--local", good, "--remote", bad, "-o", out)
        #expect(malformed.status == 65)
        #expect(malformed.errors.hasPrefix("savetool: \(bad):2:3: "), "\(malformed.errors)")
        let missing = try CLI.run("merge", "--local", good, "--remote", root.appendingPathComponent("nope.json").path, "-o", out)
        #expect(missing.status == 66)
        #expect(try CLI.run("merge", "--local", good, "--remote", good).status == 64, "no output and no --dry-run")
        // An option merge does not have is named, not its value.
        let unknown = try CLI.run("merge", "--local", good, "--remote", good, "-o", out, "--null", "drop")
        #expect(unknown.status == 64 && unknown.errors.hasPrefix("savetool: unknown option '--null' (with 'drop')"), "\(unknown.errors)")
        let folders = try CLI.run("merge", "--local", root.path, "--remote", root.path, "-o", good)
        #expect(folders.status == 73, "an existing output other than the local copy is never replaced")
        let other = root.appendingPathComponent("other.json").path
        try Data(#"{"a": 2}"#.utf8).write(to: URL(fileURLWithPath: other))
        #expect(try CLI.run("merge", "--local", good, "--remote", other, "-o", other, "--prefer", "local").status == 73)
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == Data(#"{"a": 2}"#.utf8))
        #expect(try CLI.run("merge", "--git", root.path, root.path, root.path).status == 64, "git gives a driver files")
        // Under git the copies are git's temporary files: a message names the path and the side.
        let underGit = try CLI.run("merge", "--git", other, good, bad, "Documents/settings.json")
        #expect(underGit.status == 65 && underGit.errors.hasPrefix("savetool: Documents/settings.json (theirs):2:3: "), "\(underGit.errors)")
        // A conflict under git names git's ways to settle it, not flags git cannot pass.
        let texts = ["o", "a", "b"].map { root.appendingPathComponent("git-\($0).txt").path }
        for (path, text) in zip(texts, ["x\n", "y\n", "z\n"]) { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }
        let gitConflict = try CLI.run("merge", "--git", texts[0], texts[1], texts[2], "notes.txt")
        #expect(gitConflict.status == 1 && gitConflict.errors.contains("git checkout --ours or --theirs") && !gitConflict.errors.contains("--answers"), "\(gitConflict.errors)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // A report over a copy, or the merged copy, or a merged folder or report inside a copy's
        // folder, is refused (64) before anything is written: a merge never writes over what
        // it was given.
        let remoteFolder = root.appendingPathComponent("remote-folder"), localFolder = root.appendingPathComponent("local-folder")
        for folder in [remoteFolder, localFolder] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(#"{"a": 1}"#.utf8).write(to: folder.appendingPathComponent("save.json"))
        }
        let inRemote = remoteFolder.appendingPathComponent("save.json").path
        for (label, arguments, message) in [
            ("report over the remote copy", ["--local", good, "--remote", other, "-o", out, "--report", other, "--prefer", "local"], "is the remote copy"),
            ("report over the local copy", ["--local", good, "--remote", other, "-o", out, "--report", good, "--prefer", "local"], "is the local copy"),
            ("report over the merged copy", ["--local", good, "--remote", other, "-o", out, "--report", out, "--prefer", "local"], "is the merged copy"),
            ("report in the remote folder", ["--local", localFolder.path, "--remote", remoteFolder.path, "-o", root.appendingPathComponent("merged").path, "--report", inRemote], "inside the remote copy"),
            ("merged folder in the remote folder", ["--local", localFolder.path, "--remote", remoteFolder.path, "-o", remoteFolder.appendingPathComponent("merged").path], "inside the remote copy"),
        ] {
            let refused = try Processes.run([CLI.executable, "merge"] + arguments)
            #expect(refused.status == 64 && refused.errors.contains(message), "\(label): \(refused.status) \(refused.errors)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: other)) == Data(#"{"a": 2}"#.utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: good)) == Data(#"{"a": 1}"#.utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: inRemote)) == Data(#"{"a": 1}"#.utf8))
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: remoteFolder.appendingPathComponent("merged").path))

        // A copy that breaks its kind's schema (coins held as a string, inside the binary plist's
        // embedded save) is refused, naming the place: a counter took it for 0 and wrote 30.0.
        let base = root.appendingPathComponent("base.plist").path, phone = root.appendingPathComponent("phone.plist").path
        let tablet = root.appendingPathComponent("tablet.plist").path
        for path in [base, phone, tablet] { try FileManager.default.copyItem(atPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"), toPath: path) }
        #expect(try CLI.run("set", phone, "/gameSave/coins", "70").status == 0)
        #expect(try CLI.run("set", tablet, "/gameSave/coins", #""abc""#).status == 0)
        let invalid = try CLI.run("merge", "--local", phone, "--remote", tablet, "--base", base, "-o", out)
        #expect(invalid.status == 65, "\(invalid.outputText)\(invalid.errors)")
        #expect(invalid.errors == "savetool: \(tablet):/gameSave/coins: not a valid blocks.gamesave version 2: found a string, expected integer\n", "\(invalid.errors)")
        // An answer that gives a value the schema refuses: refused, nothing written.
        #expect(try CLI.run("set", tablet, "/gameSave/coins", "25").status == 0)
        let answers = root.appendingPathComponent("answers.json").path
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/gameSave/coins", "value": "lots"}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let answered = try CLI.run("merge", "--local", phone, "--remote", tablet, "-o", out, "--answers", answers)
        #expect(answered.status == 1, "a conflict, left open: \(answered.outputText)\(answered.errors)")
        #expect(answered.outputText.contains("conflict at /gameSave/coins: the merged save would break blocks.gamesave version 2 here: found a string, expected integer"), "\(answered.outputText)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // --prefer does not overrule the answer, and the hint says so rather than offering
        // --prefer; the report names the inner save's kind, whose schema refused it.
        let preferred = try CLI.run("merge", "--local", phone, "--remote", tablet, "-o", out, "--answers", answers, "--prefer", "remote", "--json")
        #expect(preferred.status == 1, "\(preferred.errors)")
        #expect(preferred.errors.contains("--prefer cannot settle these: the merged save would break its kind's schema there with the value taken; answer them with --answers"), "\(preferred.errors)")
        let report = try Codecs.json.decode(Array(preferred.output))
        let schema = report["decisions"]?.arrayValue?.first { $0["policy"] == "schema" }
        #expect(schema?["kind"] == "blocks.gamesave", "\(String(describing: schema))")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A counter's sum that breaks the schema (each device lowered `launchCount` far below the
    /// base: the sum is below 0) is a `schema` conflict, and an answer for that place settles
    /// it, with a value or a side, and so does --prefer; a value the schema refuses does not.
    /// Neither could before: the conflict never reached the answers.
    @Test func aSchemaConflictIsSettledByAnAnswerOrAPreference() throws {
        let root = try Processes.temporaryDirectory("schema-conflict")
        defer { try? FileManager.default.removeItem(at: root) }
        let (base, phone, tablet) = (root.appendingPathComponent("base.plist").path, root.appendingPathComponent("phone.plist").path, root.appendingPathComponent("tablet.plist").path)
        for path in [base, phone, tablet] { try FileManager.default.copyItem(atPath: CLI.sample("blocks-2026/Library/Preferences/com.example.blocks.plist"), toPath: path) }
        #expect(try CLI.run("get", base, "/launchCount").outputText == "1093\n")
        #expect(try CLI.run("set", phone, "/launchCount", "300").status == 0)
        #expect(try CLI.run("set", tablet, "/launchCount", "250").status == 0)
        let out = root.appendingPathComponent("out.plist").path
        let open = try CLI.run("merge", "--local", phone, "--remote", tablet, "--base", base, "-o", out)
        #expect(open.status == 1 && open.outputText.contains("conflict at /launchCount: the merged save would break"), "\(open.outputText)\(open.errors)")
        #expect(!FileManager.default.fileExists(atPath: out))
        var written = 0
        func answering(_ answer: String) throws -> String {
            written += 1
            let path = root.appendingPathComponent("answers-\(written).json").path
            try Data(#"{"format": "savetool.merge-answers/1", "answers": [\#(answer)]}"#.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        for (settling, expected) in [
            (["--answers", try answering(#"{"file": "phone.plist", "path": "/launchCount", "value": 1093}"#)], "1093"),
            (["--answers", try answering(#"{"path": "/launchCount", "take": "remote"}"#)], "250"),
            (["--prefer", "local"], "300"),
        ] {
            try? FileManager.default.removeItem(atPath: out)
            let settled = try Processes.run([CLI.executable, "merge", "--local", phone, "--remote", tablet, "--base", base, "-o", out] + settling)
            #expect(settled.status == 0, "\(settling): \(settled.outputText)\(settled.errors)")
            #expect(!settled.errors.contains("settled nothing"), "\(settling): \(settled.errors)")
            #expect(try CLI.run("get", out, "/launchCount").outputText == expected + "\n", "\(settling)")
            #expect(try CLI.run("validate", out).status == 0, "\(settling)")
        }
        // A value the schema refuses settles nothing: the conflict stays, and says why.
        try? FileManager.default.removeItem(atPath: out)
        let refused = try CLI.run("merge", "--local", phone, "--remote", tablet, "--base", base, "-o", out, "--answers", try answering(#"{"path": "/launchCount", "value": -1}"#))
        #expect(refused.status == 1 && refused.outputText.contains("the value it was settled with breaks it too"), "\(refused.outputText)\(refused.errors)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Four things a new user met: a text file changed alike on both devices merges (it made
    /// the whole merge exit 65, "cannot tell its format"); a new output keeps the local copy's
    /// permissions (a new folder too: it was 0700); a report that cannot be written stops the merge before anything is written
    /// (the merged copy was written, then 73); and a bundle merges in place, the old one kept.
    @Test func textFilesPermissionsReportsAndBundlesInPlace() throws {
        let root = try Processes.temporaryDirectory("merge-details")
        defer { try? FileManager.default.removeItem(at: root) }
        func folder(_ name: String, notes: String, config: String) throws -> String {
            let path = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
            try Data(notes.utf8).write(to: path.appendingPathComponent("notes.txt"))
            try Data(config.utf8).write(to: path.appendingPathComponent("config.json"))
            return path.path
        }
        let base = try folder("base", notes: "a\n", config: #"{"a": 1}"#)
        let local = try folder("local", notes: "b\n", config: #"{"a": 1}"#)
        let remote = try folder("remote", notes: "b\n", config: #"{"a": 2}"#)
        let merged = root.appendingPathComponent("merged").path
        chmod(local, 0o750)
        let alike = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", merged)
        #expect(alike.status == 0, "\(alike.outputText)\(alike.errors)")
        // A new folder is as open as the local one, not private as its staging folder was made.
        var folderInfo = stat()
        #expect(stat(merged, &folderInfo) == 0 && folderInfo.st_mode & 0o7777 == 0o750, "\(String(folderInfo.st_mode & 0o7777, radix: 8))")
        #expect(alike.outputText.contains("notes.txt\n  the whole file: changedAlike, the same change on both sides"), "\(alike.outputText)")
        #expect(try String(contentsOfFile: merged + "/notes.txt", encoding: .utf8) == "b\n")
        #expect(try String(contentsOfFile: merged + "/config.json", encoding: .utf8) == #"{"a": 2}"#)
        try Data("c\n".utf8).write(to: URL(fileURLWithPath: remote + "/notes.txt"))
        let differ = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", root.appendingPathComponent("merged2").path)
        #expect(differ.status == 1, "a whole-file conflict: \(differ.errors)")
        // A value given for a whole file settles nothing, and says so; taking a side does.
        let answers = root.appendingPathComponent("answers.json").path
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"file": "notes.txt", "path": "", "value": {"a": 1}}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let misfit = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", root.appendingPathComponent("merged3").path, "--answers", answers)
        #expect(misfit.status == 1, "\(misfit.errors)")
        #expect(misfit.errors.contains("\(answers):/answers/0: a value for the whole file in notes.txt, expected \"take\": \"local\", \"remote\" or \"base\""), "\(misfit.errors)")
        // Said under -q too: exit 1 alone would not say that nothing was written, nor why.
        let quiet = try CLI.run("merge", "-q", "--local", local, "--remote", remote, "--base", base, "-o", root.appendingPathComponent("merged3").path, "--answers", answers)
        #expect(quiet.status == 1 && quiet.outputText.isEmpty, "\(quiet.outputText)")
        #expect(quiet.errors.contains("/answers/0: a value for the whole file") && quiet.errors.contains("1 conflict left, nothing written"), "\(quiet.errors)")
        // Two answers to one conflict are refused whole, naming both (the second used to be
        // told "no conflict at ''" while the first, unusable, settled nothing).
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"file": "notes.txt", "path": "", "value": "x"}, {"file": "notes.txt", "path": "", "take": "remote"}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let twice = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", root.appendingPathComponent("merged3").path, "--answers", answers)
        #expect(twice.status == 65, "\(twice.errors)")
        #expect(twice.errors == "savetool: \(answers):/answers/1: a second answer to the conflict at '' in notes.txt, expected one answer per conflict (/answers/0 answers it)\n")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("merged3").path))
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"file": "notes.txt", "path": "", "take": "remote"}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let taken = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", root.appendingPathComponent("merged4").path, "--answers", answers)
        #expect(taken.status == 0, "\(taken.errors)")
        #expect(try String(contentsOfFile: root.appendingPathComponent("merged4/notes.txt").path, encoding: .utf8) == "c\n")

        // Permissions, and a report that cannot be written.
        let phone = root.appendingPathComponent("phone.json").path, tablet = root.appendingPathComponent("tablet.json").path
        try Data(#"{"a": 1, "b": 1}"#.utf8).write(to: URL(fileURLWithPath: phone))
        try Data(#"{"a": 2, "b": 1}"#.utf8).write(to: URL(fileURLWithPath: tablet))
        chmod(phone, 0o600)
        let private_ = root.appendingPathComponent("private.json").path
        #expect(try CLI.run("merge", "-q", "--local", phone, "--remote", tablet, "--prefer", "remote", "-o", private_).status == 0)
        var info = stat()
        #expect(stat(private_, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let unreported = root.appendingPathComponent("unreported.json").path
        let noReport = try CLI.run("merge", "-q", "--local", phone, "--remote", tablet, "--prefer", "remote", "-o", unreported, "--report", root.path + "/missing/r.json")
        #expect(noReport.status == 73, "\(noReport.errors)")
        #expect(!FileManager.default.fileExists(atPath: unreported), "nothing written when the report cannot be")

        // A bundle merged in place: written again, the one it replaces kept beside it.
        try Data("b\n".utf8).write(to: URL(fileURLWithPath: remote + "/notes.txt"))
        for name in ["base", "local", "remote"] {
            let format = name == "local" ? "tar.zst" : "tar.gz"
            #expect(try CLI.run("export", root.appendingPathComponent(name).path, "-o", root.appendingPathComponent("\(name).\(format)").path, "-q").status == 0)
        }
        // A private zstd bundle stays a private zstd bundle.
        let bundle = root.appendingPathComponent("local.tar.zst").path
        chmod(bundle, 0o600)
        let before = try Data(contentsOf: URL(fileURLWithPath: bundle))
        let inPlace = try CLI.run("merge", "--local", bundle, "--remote", root.appendingPathComponent("remote.tar.gz").path, "--base", root.appendingPathComponent("base.tar.gz").path, "-o", bundle)
        #expect(inPlace.status == 0, "\(inPlace.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: bundle)).starts(with: [0x28, 0xB5, 0x2F, 0xFD]), "still zstd")
        #expect(stat(bundle, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let restored = root.appendingPathComponent("restored").path
        #expect(try CLI.run("import", bundle, "--into", restored, "--no-migrate", "-q").status == 0)
        #expect(try String(contentsOfFile: restored + "/config.json", encoding: .utf8) == #"{"a": 2}"#)
        let kept = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasPrefix("local.tar.zst-before-merge-") }
        #expect(kept.count == 1, "\(kept)")
        // The copy kept of a private bundle is as private (it was 0644, readable by anyone).
        #expect(stat(root.path + "/" + (kept.first ?? ""), &info) == 0 && info.st_mode & 0o777 == 0o600)
        // The merged bundle names the local copy as its source, not the folder it was staged in.
        let described = try CLI.run("--json", "inspect", bundle)
        #expect(try Codecs.value(described.outputText)["manifest"]?["source"] == "local.tar.zst", "\(described.outputText.prefix(400))")
        let keptRestored = root.appendingPathComponent("kept").path
        #expect(try CLI.run("import", root.appendingPathComponent(try #require(kept.first)).path, "--into", keptRestored, "--no-migrate", "-q").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: keptRestored + "/local.tar.zst")) == before, "the old bundle, byte for byte")
    }

    /// SIGKILL at 10 moments spread over a merge of a bundle in place: after every kill the
    /// bundle is its old bytes or a whole merged bundle, and when it is the merged one, the old
    /// one is kept whole beside it (its import gives it back byte for byte). Whatever a kill
    /// left unfinished is a temporary file that the next run removes or ignores.
    @Test func killedMergesOfABundleInPlaceLoseNothing() throws {
        let root = try Processes.temporaryDirectory("merge-crash")
        defer { try? FileManager.default.removeItem(at: root) }
        for (name, coins) in [("base", 1), ("local", 1), ("remote", 2)] {
            let folder = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for index in 0..<400 {
                let value = index == 0 ? coins : index
                try Data(#"{"slot": \#(index), "coins": \#(value), "note": "\#(String(repeating: "x", count: 200))"}"#.utf8)
                    .write(to: folder.appendingPathComponent("save-\(index).json"))
            }
            #expect(try CLI.run("export", folder.path, "-o", root.appendingPathComponent("\(name).tar.gz").path, "-q").status == 0)
        }
        let bundle = root.appendingPathComponent("local.tar.gz").path
        let original = try Data(contentsOf: URL(fileURLWithPath: bundle))
        let merge = [CLI.executable, "merge", "-q", "--local", bundle, "--remote", root.appendingPathComponent("remote.tar.gz").path,
                     "--base", root.appendingPathComponent("base.tar.gz").path, "-o", bundle]
        func restore(_ path: String) throws -> String? {
            let into = root.appendingPathComponent("check-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: into) }
            guard try CLI.run("import", path, "--into", into, "--no-migrate", "-q").status == 0 else { return nil }
            return try String(contentsOfFile: into + "/save-0.json", encoding: .utf8)
        }
        let started = Date()
        #expect(try Processes.run(merge).status == 0)
        let fullRun = Date().timeIntervalSince(started)
        #expect(try restore(bundle)?.contains(#""coins": 2"#) == true)

        var outcomes = (old: 0, new: 0)
        for round in 0..<10 {
            for leftover in try FileManager.default.contentsOfDirectory(atPath: root.path) where leftover.contains("before-merge") {
                try FileManager.default.removeItem(at: root.appendingPathComponent(leftover))
            }
            try original.write(to: URL(fileURLWithPath: bundle))
            let delay = fullRun * (Double(round) + 0.5) / 10
            _ = try Processes.runKilled(after: delay, merge)
            let moment = "round \(round) (killed after \(Int(delay * 1000)) ms)"
            let now = try Data(contentsOf: URL(fileURLWithPath: bundle))
            if now == original {
                outcomes.old += 1
                continue
            }
            outcomes.new += 1
            #expect(try restore(bundle)?.contains(#""coins": 2"#) == true, "\(moment): the bundle is neither old nor a whole merge")
            let kept = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.hasPrefix("local.tar.gz-before-merge-") }
            #expect(kept.count == 1, "\(moment): \(kept)")
            let keptInto = root.appendingPathComponent("kept-\(round)")
            #expect(try CLI.run("import", root.appendingPathComponent(try #require(kept.first)).path, "--into", keptInto.path, "--no-migrate", "-q").status == 0)
            #expect(try Data(contentsOf: keptInto.appendingPathComponent("local.tar.gz")) == original, "\(moment): the old bundle is not kept whole")
            try FileManager.default.removeItem(at: keptInto)
        }
        for leftover in try FileManager.default.contentsOfDirectory(atPath: root.path) where leftover.hasPrefix(".") {
            #expect(FileIO.isTemporaryName(leftover), "\(leftover) is not a temporary file")
        }
        #expect(outcomes.old > 0, "old \(outcomes.old), new \(outcomes.new)")
    }

    /// The walk merges files and folders only. A FIFO or a link in the local folder, where the
    /// other copy has a file, is refused before anything is replaced: renaming over it would drop
    /// something the merge never read. A link where the other copy has a folder would lead the
    /// merged files out of the local copy.
    @Test(arguments: ["FIFO", "symbolic link", "link to a folder"])
    func aLocalFIFOOrLinkIsNeverReplacedInPlace(_ type: String) throws {
        let root = try Processes.temporaryDirectory("merge-special")
        defer { try? FileManager.default.removeItem(at: root) }
        let phone = try Device(root.appendingPathComponent("phone")), tablet = try Device(root.appendingPathComponent("tablet"))
        let outside = root.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: false)
        try FileManager.default.createDirectory(at: tablet.root.appendingPathComponent("Documents/shared"), withIntermediateDirectories: false)
        try Data("tablet\n".utf8).write(to: tablet.root.appendingPathComponent(type == "link to a folder" ? "Documents/shared/x.txt" : "Documents/shared-file"))
        // Installed first, in name order, had the check come file by file.
        try Data("tablet\n".utf8).write(to: tablet.root.appendingPathComponent("Documents/from-tablet.txt"))
        let target = phone.file(type == "link to a folder" ? "Documents/shared" : "Documents/shared-file")
        switch type {
        case "FIFO": #expect(mkfifo(target, 0o644) == 0)
        case "symbolic link": try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: "notes.txt")
        default: try FileManager.default.createSymbolicLink(atPath: target, withDestinationPath: outside.path)
        }

        let result = try CLI.run("merge", "--local", phone.path, "--remote", tablet.path, "-o", phone.path)
        #expect(result.status == 73, "\(result.errors)")
        let what = type == "link to a folder" ? "a symbolic link where the merge writes a folder, expected a folder or nothing" : "a \(type) where the merge writes a file, expected a file or nothing"
        #expect(result.errors.contains("\(target): \(what); nothing was changed"))
        var info = stat()
        #expect(lstat(target, &info) == 0 && info.st_mode & S_IFMT == (type == "FIFO" ? S_IFIFO : S_IFLNK))
        #expect(!FileManager.default.fileExists(atPath: phone.file("Documents/from-tablet.txt")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty, "nothing written through the link")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() == ["outside", "phone", "tablet"], "no kept copy, no staging left")
    }

    /// On a terminal, without answers, each conflict is asked (run under a pseudo-terminal).
    @Test func aConflictIsAskedOnATerminal() throws {
        let root = try Processes.temporaryDirectory("merge-ask")
        defer { try? FileManager.default.removeItem(at: root) }
        let save = { (coins: Int) in #"{"saveVersion": 2, "player": {"level": 1, "xp": 0}, "coins": \#(coins), "unlockedThemes": [], "lastSaved": "x"}"# }
        try Data(save(70).utf8).write(to: root.appendingPathComponent("phone.json"))
        try Data(save(25).utf8).write(to: root.appendingPathComponent("tablet.json"))
        let command = "\(CLI.executable) merge --kind blocks.gamesave --local phone.json --remote tablet.json -o merged.json"
        let asked = try Processes.run(["script", "-qefc", command, "/dev/null"], input: Array("r\n".utf8), directory: root)
        #expect(asked.status == 0, "\(asked.outputText)")
        #expect(asked.outputText.contains("phone.json: conflict at /coins: a counter changed on both sides"))
        #expect(asked.outputText.contains("Keep which? [l]ocal, [r]emote, or Enter to leave it"))
        #expect(asked.outputText.contains("/coins: counter → 25, a counter changed on both sides, but without a base the two changes cannot be added; settled by the answer on the terminal"))
        let merged = try Codecs.json.decode(Array(try Data(contentsOf: root.appendingPathComponent("merged.json"))))
        #expect(merged["coins"] == 25)
    }

    /// Two bundles merged into a third: a backup of each device, and a bundle as the result.
    @Test func bundlesInABundleOut() throws {
        let root = try Processes.temporaryDirectory("merge-bundles")
        defer { try? FileManager.default.removeItem(at: root) }
        let phone = try Device(root.appendingPathComponent("phone")), tablet = try Device(root.appendingPathComponent("tablet"))
        try tablet.set("Documents/games/daily.json", "/completed", "true")
        for device in ["phone", "tablet"] {
            #expect(try CLI.run("export", root.appendingPathComponent(device).path, "-o", root.appendingPathComponent("\(device).tar.gz").path).status == 0)
        }
        _ = phone
        let merged = root.appendingPathComponent("merged.tar.zst").path
        let result = try CLI.run("merge", "--local", root.appendingPathComponent("phone.tar.gz").path, "--remote", root.appendingPathComponent("tablet.tar.gz").path, "-o", merged)
        #expect(result.status == 0, "\(result.errors)")
        let restored = root.appendingPathComponent("restored").path
        #expect(try CLI.run("import", merged, "--into", restored).status == 0)
        #expect(try CLI.run("get", restored + "/Documents/games/daily.json", "/completed").outputText == "true\n")
        #expect(Files.regularFiles(under: restored).count == 4)
    }

    /// git calls the driver on a binary plist save changed on two branches; the result is the
    /// merge of both, still a binary plist, and `git diff` shows it as typed JSON (textconv).
    @Test func asAGitMergeDriver() throws {
        let repository = try Processes.temporaryDirectory("merge-git")
        defer { try? FileManager.default.removeItem(at: repository) }
        var environment = ProcessInfo.processInfo.environment
        environment["GIT_CONFIG_GLOBAL"] = "/dev/null"
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        for (key, value) in ["GIT_AUTHOR_NAME": "QA", "GIT_AUTHOR_EMAIL": "qa@example.com", "GIT_COMMITTER_NAME": "QA", "GIT_COMMITTER_EMAIL": "qa@example.com"] {
            environment[key] = value
        }
        func git(_ arguments: String...) throws -> ProcessResult {
            let result = try Processes.run(["git"] + arguments, directory: repository, environment: environment)
            #expect(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.errors)")
            return result
        }
        let save = "Library/Preferences/com.example.blocks.plist"
        let device = try Device(repository)
        _ = try git("init", "-q", "-b", "main")
        _ = try git("config", "merge.savetool.driver", "\(CLI.executable) merge --git %O %A %B %P")
        _ = try git("config", "diff.savetool.textconv", "\(CLI.executable) convert --to json")
        try Data("*.plist merge=savetool diff=savetool\n".utf8).write(to: repository.appendingPathComponent(".gitattributes"))
        _ = try git("add", "-A")
        _ = try git("commit", "-q", "-m", "base")
        _ = try git("checkout", "-q", "-b", "tablet")
        try device.set(save, "/gameSave/coins", "25")
        try device.set(save, "/gameSave/unlockedThemes/-", #""lava""#)
        _ = try git("commit", "-q", "-am", "tablet")
        _ = try git("checkout", "-q", "main")
        try device.set(save, "/gameSave/coins", "70")
        _ = try git("commit", "-q", "-am", "phone")
        let merge = try git("merge", "-q", "--no-edit", "tablet")
        #expect(merge.status == 0)
        #expect(merge.outputText.contains("written to \(save)\n"), "the file's path, not git's temporary name: \(merge.outputText)")
        #expect(try device.get(save, "/gameSave/coins") == "55", "40 + 30 − 15")
        #expect(try device.get(save, "/gameSave/unlockedThemes/4") == #""lava""#)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: device.file(save))).prefix(8)) == Array("bplist00".utf8))
        let diff = try git("diff", "HEAD~1", "--", save).outputText
        #expect(diff.contains(#"-  "gameSave": {"$data": "#) && diff.contains(#"+  "gameSave": {"$data": "#), "typed JSON through textconv:\n\(diff)")
        #expect(!diff.contains("Binary files"))
    }

    /// Copies of an older version are brought to the current one before they are merged: the
    /// merge says so, as import does, rather than leave a save its app may no longer read
    /// unexplained.
    @Test func aMigrationBeforeMergingIsSaid() throws {
        let root = try Processes.temporaryDirectory("merge-migrated")
        defer { try? FileManager.default.removeItem(at: root) }
        let (base, local, remote) = (root.path + "/b0.plist", root.path + "/b1.plist", root.path + "/b2.plist")
        for copy in [base, local, remote] { try FileManager.default.copyItem(atPath: CLI.blocks, toPath: copy) }
        #expect(try CLI.run("set", local, "/launchCount", "300").status == 0)
        #expect(try CLI.run("set", remote, "/musicVolume", "0.1").status == 0)
        let merged = try CLI.run("merge", "--local", local, "--remote", remote, "--base", base, "-o", root.path + "/m.plist", "--report", root.path + "/r.json")
        #expect(merged.status == 0, "\(merged.errors)")
        #expect(merged.outputText.contains("  the whole file: migrated, brought to the current versions before merging: /gameSave: blocks.gamesave 1→2 (local, remote, base)\n"), "\(merged.outputText)")
        let report = try Codecs.value(try String(contentsOfFile: root.path + "/r.json", encoding: .utf8))
        #expect(report["decisions"]?.arrayValue?.first?["policy"] == "migrated", "\(report)")
    }

    /// An answer for a group (lexMax) of another shape than one value per member settles
    /// nothing: it is named as such, and --prefer settles the conflict instead (it used to be
    /// printed as settled while the file got the local side).
    @Test func aGroupAnswerOfTheWrongShapeIsNamedAndPreferSettles() throws {
        let root = try Processes.temporaryDirectory("merge-group")
        defer { try? FileManager.default.removeItem(at: root) }
        let formats = root.appendingPathComponent("F").path
        let made = try CLI.run("formats", "new", "demo.game", "--codec", "json", "--file", "game.json", "--version-path", "/v", "--directory", formats)
        #expect(made.status == 0, "\(made.errors)")
        try Data(#"{"format": "savetool.merge/1", "kind": "demo.game", "rules": [{"group": ["/level", "/xp"], "policy": "lexMax"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: formats + "/demo.game/merge.json"))
        let (local, remote, answers) = (root.path + "/l/game.json", root.path + "/r/game.json", root.path + "/a.json")
        for (path, text) in [(local, #"{"v": 1, "level": 4, "xp": 1}"#), (remote, #"{"v": 1, "level": "4", "xp": 5}"#)] {
            try FileManager.default.createDirectory(atPath: FileIO.parentDirectory(of: path), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        try Data(#"{"format": "savetool.merge-answers/1", "answers": [{"path": "/level", "value": [9]}]}"#.utf8).write(to: URL(fileURLWithPath: answers))
        let merged = root.path + "/m.json"
        let result = try CLI.run("--formats", formats, "merge", "--local", local, "--remote", remote, "-o", merged, "--answers", answers, "--prefer", "remote")
        #expect(result.status == 0, "\(result.outputText)\(result.errors)")
        #expect(result.errors.contains("\(answers):/answers/0: a value for the group at /level: an array of 1, expected an array of 2 values, one per member in the rule's order; this answer settled nothing"), "\(result.errors)")
        #expect(try Codecs.value(try String(contentsOfFile: merged, encoding: .utf8)) == ["v": 1, "level": "4", "xp": 5], "--prefer remote settled it")
    }

    /// What a game developer met merging a phone's, a tablet's and a TV's copies: a second
    /// --remote dropped the first (exit 0, the tablet's coins and theme lost); two identical
    /// copies counted their coins twice without a word; a newer save inside the plist was named by the
    /// plist's kind; the report named the plist's kind for the inner save's decisions; and a
    /// merge into a folder that does not exist printed every decision before failing.
    @Test func manyCopiesIdenticalCopiesAndInnerKinds() throws {
        let root = try Processes.temporaryDirectory("merge-devices")
        defer { try? FileManager.default.removeItem(at: root) }
        let blocks = "Library/Preferences/com.example.blocks.plist"
        let base = try Device(root.appendingPathComponent("base")), phone = try Device(root.appendingPathComponent("phone"))
        let tablet = try Device(root.appendingPathComponent("tablet")), tv = try Device(root.appendingPathComponent("tv"))
        try phone.set(blocks, "/gameSave/coins", "70")  // 40 → 70
        try tablet.set(blocks, "/gameSave/coins", "25")  // 40 → 25
        try tablet.set(blocks, "/gameSave/unlockedThemes/-", #""lava""#)
        try tv.set(blocks, "/gameSave/coins", "50")  // 40 → 50
        let out = root.appendingPathComponent("merged.plist").path

        let twice = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "--remote=" + tv.file(blocks), "--base", base.file(blocks), "-o", out)
        #expect(twice.status == 64, "\(twice.outputText)\(twice.errors)")
        #expect(twice.errors.contains("--remote given more than once, expected one copy each; to merge a third device's copy, merge it into the result in turn, with the same --base"), "\(twice.errors)")
        let outputs = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "-o", out, "--output=" + out + "2")
        #expect(outputs.status == 64 && outputs.errors.contains("-o given more than once, expected it once"), "\(outputs.errors)")
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + "2"))
        // In turn, with the same base: 40 + 30 − 15 + 10.
        let first = root.appendingPathComponent("phone-tablet.plist").path
        #expect(try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "--base", base.file(blocks), "-o", first).status == 0)
        let all = try CLI.run("merge", "--local", first, "--remote", tv.file(blocks), "--base", base.file(blocks), "-o", out, "--json")
        #expect(all.status == 0, "\(all.errors)")
        #expect(try CLI.run("get", out, "/gameSave/coins").outputText == "65\n")
        #expect(try CLI.run("get", out, "/gameSave/unlockedThemes/4").outputText == "\"lava\"\n")
        let report = try Codecs.json.decode(Array(all.output))
        let coins = report["decisions"]?.arrayValue?.first { $0["path"] == "/gameSave/coins" }
        #expect(coins?["kind"] == "blocks.gamesave", "the inner save's own kind decided: \(String(describing: coins))")
        #expect(report["decisions"]?.arrayValue?.first { $0["path"] == "/launchCount" } == nil)

        // The same bytes on both sides are two devices' alike changes (each earned 30: 100),
        // and the merge says so first: the same save given twice would count them twice.
        let copy = root.appendingPathComponent("phone-again.plist").path
        try FileManager.default.copyItem(atPath: phone.file(blocks), toPath: copy)
        let same = root.appendingPathComponent("same.plist").path
        let identical = try CLI.run("merge", "--local", phone.file(blocks), "--remote", copy, "--base", base.file(blocks), "-o", same)
        #expect(identical.status == 0, "\(identical.errors)")
        #expect(identical.outputText.contains("""
            (blocks.defaults)
              the whole file: sameBytes, the two copies are the same bytes: merged as two devices that made the same changes, so each counter counts both (one save given twice would count its changes twice)
              /gameSave/coins: counter → 100
            """), "\(identical.outputText)")
        #expect(try CLI.run("get", same, "/gameSave/coins").outputText == "100\n")

        // A newer save inside the plist is named by its own kind, at its place.
        try tv.set(blocks, "/gameSave/saveVersion", "3")
        let newer = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tv.file(blocks), "--base", base.file(blocks), "-o", root.appendingPathComponent("n.plist").path)
        #expect(newer.status == 65, "\(newer.errors)")
        #expect(newer.errors.contains("\(tv.file(blocks)):/gameSave: blocks.gamesave version 3, newer than the 2 savetool knows; expected at most 2"), "\(newer.errors)")

        // Nowhere to put the result: said before any decision is printed, nothing written.
        let before = try Data(contentsOf: URL(fileURLWithPath: phone.file(blocks)))
        let nowhere = root.appendingPathComponent("missing/merged.plist").path
        let lost = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "--base", base.file(blocks), "-o", nowhere)
        #expect(lost.status == 73, "\(lost.errors)")
        #expect(lost.outputText.isEmpty, "\(lost.outputText)")
        #expect(lost.errors.contains("missing: no such folder, expected the existing folder the merged copy goes in"), "\(lost.errors)")
        let inFile = try CLI.run("merge", "--local", phone.file(blocks), "--remote", tablet.file(blocks), "-o", phone.file(blocks) + "/merged.plist")
        #expect(inFile.status == 73 && inFile.errors.contains("com.example.blocks.plist: not a folder, expected the existing folder"), "\(inFile.errors)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: phone.file(blocks))) == before)
    }
}

extension MergeCommandTests.Device {
    /// A folder that already exists (a merge's output).
    static func existing(_ root: URL) throws -> Self { Self(existingRoot: root) }
    private init(existingRoot: URL) { root = existingRoot }
}
