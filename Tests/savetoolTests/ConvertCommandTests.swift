import Foundation
import TestSupport
import Testing

@Suite("savetool convert")
struct ConvertCommandTests {
    /// --compact writes an XML plist without indentation too, and it reads back the same.
    @Test func compactXMLHasNoIndentation() throws {
        let compact = try CLI.run("convert", CLI.tournament, "--to", "plist", "--compact")
        #expect(compact.status == 0 && !compact.outputText.contains("\t") && compact.outputText.contains("<dict>\n<key>"), "\(compact.errors)")
        let indented = try CLI.run("convert", CLI.tournament, "--to", "plist")
        #expect(indented.outputText.contains("\t<key>"))
        let back = try CLI.run("convert", "-", "--from", "plist", "--to", "json", "--compact", input: Array(compact.outputText.utf8))
        let direct = try CLI.run("convert", CLI.tournament, "--compact")
        #expect(back.status == 0 && back.outputText == direct.outputText, "\(back.errors)")
    }

    /// JSON in UTF-16 is refused as JSON (RFC 8259 asks for UTF-8), not taken for an XML plist
    /// because of its byte order mark; an XML plist in UTF-16 is read.
    /// A plist dictionary whose only key is a marker's name round-trips through typed JSON,
    /// for every marker: `{"$uid": 5}` came back as a UID.
    @Test func aDictionaryNamedLikeAMarkerComesBackADictionary() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("source.json").path
        try Data(#"{"u": {"$dict": {"$uid": 5}}, "d": {"$dict": {"$date": 1}}, "b": {"$dict": {"$data": "x"}}, "r": {"$dict": {"$real": 2}}, "w": {"$dict": {"$dict": 3}}}"#.utf8)
            .write(to: URL(fileURLWithPath: source))
        for codec in ["plist", "bplist"] {
            let plist = directory.appendingPathComponent("a.\(codec)").path, json = directory.appendingPathComponent("b.json").path
            let back = directory.appendingPathComponent("c.\(codec)").path
            #expect(try CLI.run("convert", source, "--to", codec, "-o", plist).status == 0)
            #expect(try CLI.run("convert", plist, "-o", json).status == 0)
            #expect(try CLI.run("convert", json, "--to", codec, "-o", back).status == 0)
            let same = try CLI.run("diff", plist, back)
            #expect(same.status == 0, "\(codec): \(same.outputText)")
            #expect(try String(contentsOfFile: json, encoding: .utf8).contains(#""$dict": {"#), "\(codec)")
        }
    }

    /// A date an XML plist cannot spell is named by its pointer, as every other value a target
    /// cannot hold is (it was named as the whole document, `''`).
    @Test func aDateOutsideXMLsYearsIsNamedByItsPointer() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("far.json").path
        try Data(#"{"x": {"y": [1, {"$date": "0000-12-31T00:00:00Z"}]}}"#.utf8).write(to: URL(fileURLWithPath: source))
        let refused = try CLI.run("convert", source, "-o", directory.appendingPathComponent("far.plist").path)
        #expect(refused.status == 65)
        #expect(refused.errors == "savetool: \(source):/x/y/1: a date outside years 1–9999 cannot be written as plist, expected a date an XML plist can spell (bplist and typed JSON keep it)\n")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("far.plist").path))
        // bplist keeps it, and gives it back.
        let binary = directory.appendingPathComponent("far.bplist").path
        #expect(try CLI.run("convert", source, "--to", "bplist", "-o", binary).status == 0)
        #expect(try CLI.run("diff", source, binary).status == 0)
    }

    @Test func utf16IsToldApartByItsFirstCharacter() throws {
        let json = try CLI.run("convert", "-", input: [0xFF, 0xFE] + Array(#"{"a":1}"#.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        #expect(json.status == 65 && json.errors.contains("a UTF-16 byte order mark, expected UTF-8 text (RFC 8259)"), "\(json.errors)")
        let xml = #"<?xml version="1.0" encoding="UTF-16"?><plist version="1.0"><dict><key>a</key><integer>1</integer></dict></plist>"#
        let plist = try CLI.run("convert", "-", "--compact", input: [0xFE, 0xFF] + Array(xml.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }))
        #expect(plist.status == 0 && plist.outputText == #"{"a":1}"# + "\n", "\(plist.errors)")
    }

    @Test func binaryPlistToTypedJSONAndBackIsByteIdentical() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let json = directory.appendingPathComponent("blocks.json").path
        let back = directory.appendingPathComponent("blocks.plist").path
        #expect(try CLI.run("convert", CLI.blocks, "-o", json).status == 0)
        let text = try String(contentsOfFile: json, encoding: .utf8)
        #expect(text.contains(#""installDate": {"$date": "2025-03-14T09:26:53Z"}"#))
        #expect(text.contains(#""lastReviewPrompt": {"$date": "2026-10-02T18:04:11.5Z"}"#))
        #expect(text.contains(#""deviceToken": {"$data": "jzqcHnfSsEUZqmwOPV97IQ=="}"#))
        #expect(try CLI.run("convert", json, "-o", back, "--to", "bplist").status == 0)
        #expect(FileManager.default.contentsEqual(atPath: back, andPath: CLI.blocks))
    }

    /// `-o` naming a FIFO (or a device such as /dev/null) writes into it and leaves it what it
    /// was: renaming a new file over /dev/null made it a plain file for every program.
    @Test func aFIFOOrADeviceIsWrittenInPlaceNeverReplaced() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("pipe").path
        let bundle = directory.appendingPathComponent("pipe-bundle").path
        for path in [fifo, bundle] { #expect(mkfifo(path, 0o644) == 0) }
        // A reader drains each pipe while savetool writes into it.
        final class Drained: @unchecked Sendable { var bytes: [String: Data] = [:]; let lock = NSLock() }
        let drained = Drained()
        let readers = [fifo, bundle].map { path in
            Thread {
                var data = Data()
                let descriptor = open(path, O_RDONLY)
                var buffer = [UInt8](repeating: 0, count: 65536)
                while descriptor >= 0 {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count <= 0 { break }
                    data.append(contentsOf: buffer[..<count])
                }
                close(descriptor)
                drained.lock.withLock { drained.bytes[path] = data }
            }
        }
        readers.forEach { $0.start() }
        #expect(try CLI.run("convert", CLI.blocks, "--to", "json", "-o", fifo).status == 0)
        #expect(try CLI.run("export", CLI.sample("kingdom"), "-o", bundle).status == 0)
        for _ in 0..<200 where drained.lock.withLock({ drained.bytes.count }) < 2 { Thread.sleep(forTimeInterval: 0.05) }
        for path in [fifo, bundle] {
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "\(path) is still a FIFO")
        }
        let text = String(decoding: drained.lock.withLock { drained.bytes[fifo] } ?? Data(), as: UTF8.self)
        #expect(text.contains(#""installDate": {"$date": "2025-03-14T09:26:53Z"}"#))
        #expect((drained.lock.withLock { drained.bytes[bundle] }?.count ?? 0) > 100)
        // Nothing was left beside them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["pipe", "pipe-bundle"])
        // /dev/null itself (JSON without --to, as on standard output): a tar export has no room
        // beside it for its spool, and reads twice.
        for arguments in [["convert", CLI.blocks, "-o", "/dev/null"], ["export", CLI.sample("kingdom"), "-o", "/dev/null"]] {
            let result = try Processes.run([CLI.executable] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
            var info = stat()
            #expect(stat("/dev/null", &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "/dev/null is still a device after \(arguments[0])")
        }
    }

    @Test func outputCodecFollowsTheExtension() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let xml = directory.appendingPathComponent("kingdoms.plist").path
        #expect(try CLI.run("convert", CLI.kingdoms, "-o", xml, "--round-dates").status == 0)
        #expect(try String(contentsOfFile: xml, encoding: .utf8).hasPrefix("<?xml"))
        #expect(FileManager.default.contentsEqual(atPath: xml, andPath: CLI.sample("kingdom/Library/Preferences/com.example.kingdoms.xml.plist")))
        let result = try CLI.run("convert", CLI.blocks, "-o", directory.appendingPathComponent("x.unknown").path)
        #expect(result.status == 64)
    }

    @Test func subsecondDatesInXMLAreTheUsersChoice() throws {
        let refused = try CLI.run("convert", CLI.blocks, "--to", "plist")
        #expect(refused.status == 65)
        #expect(refused.errors.contains("/lastReviewPrompt: the date 2026-10-02T18:04:11.5Z with a fraction of a second cannot be written as plist"))
        let rounded = try CLI.run("convert", CLI.blocks, "--to", "plist", "--round-dates")
        #expect(rounded.status == 0)
        #expect(rounded.outputText.contains("<date>2026-10-02T18:04:11Z</date>"))
        #expect(rounded.errors.contains("rounded 1 date down to whole seconds"))
    }

    @Test func nullInAPlistIsTheUsersChoice() throws {
        let input = Array(#"{"a": 1, "b": null, "c": [null, 2]}"#.utf8)
        let refused = try CLI.run("convert", "-", "--to", "plist", input: input)
        #expect(refused.status == 65)
        #expect(refused.errors == "savetool: <stdin>:/b: null cannot be written as plist, expected a value (plist has no null); --null drop leaves such keys out\n")
        let dropped = try CLI.run("convert", "-", "--to", "bplist", "--null", "drop", input: input)
        #expect(dropped.status == 0)
        #expect(dropped.errors.contains("dropped 2 null values"))
        #expect(try CLI.run("convert", "-", "--compact", input: dropped.output).outputText == #"{"a":1,"c":[2]}"# + "\n")
    }

    @Test func plainJSONSaysWhatChangedType() throws {
        let result = try CLI.run("convert", CLI.kingdoms, "--plain", "--compact")
        #expect(result.status == 0)
        #expect(result.outputText.contains(#""raid":"2026-11-21T07:30:00Z""#))
        #expect(result.errors.contains("plain JSON: 3 date, data or uid values written as string or integer"))
        #expect(try CLI.run("convert", CLI.kingdoms, "--plain", "-q").errors.isEmpty)
    }

    /// nst/JSONTestSuite's n_ files through the command line: exit 65 and a line:column message.
    @Test func invalidJSONExitsWith65AndLineColumn() throws {
        let files = Corpus.files(in: "jsontestsuite/test_parsing").filter { $0.contains("/n_") }
        #expect(files.count == 188)
        for file in files {
            let path = Corpus.url(file).path
            let result = try CLI.run("convert", path, "--from", "json")
            #expect(result.status == 65, "\(file): exit \(result.status) \(result.errors)")
            let escaped = NSRegularExpression.escapedPattern(for: path)
            #expect(result.errorMatches("^savetool: \(escaped):[0-9]+:[0-9]+: .+, expected .+\n$"), "\(file): \(result.errors)")
            #expect(result.output.isEmpty)
        }
    }

    @Test func binaryErrorsNameTheByte() throws {
        let path = Corpus.url("libplist/test/data/malformed_dict.bplist").path
        let result = try CLI.run("convert", path)
        #expect(result.status == 65)
        #expect(result.errors == "savetool: \(path):byte 34: a dictionary key of marker 0xD1, expected a string key (0x5n or 0x6n)\n")
    }

    @Test func failuresLeaveTheOutputUntouched() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("out.json")
        try Data("precious".utf8).write(to: output)
        let bad = directory.appendingPathComponent("bad.json")
        try Data("{\"a\": [1, 2,]}".utf8).write(to: bad)
        let result = try CLI.run("convert", bad.path, "-o", output.path)
        #expect(result.status == 65)
        #expect(result.errors == "savetool: \(bad.path):1:13: ']', expected a JSON value (object, array, string, number, true, false or null)\n")
        #expect(try String(contentsOf: output, encoding: .utf8) == "precious")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["bad.json", "out.json"])
    }

    @Test func exitCodesForFilesAndUsage() throws {
        let missing = try CLI.run("convert", "/nonexistent/save.plist")
        #expect(missing.status == 66)
        #expect(missing.errors == "savetool: /nonexistent/save.plist: cannot read: no such file or directory, expected a file that exists and can be read\n")
        let cannotCreate = try CLI.run("convert", CLI.tournament, "-o", "/nonexistent/dir/out.json")
        #expect(cannotCreate.status == 73)
        #expect(try CLI.run("convert", CLI.tournament, "--to", "yaml").status == 64)
        #expect(try CLI.run("convert").status == 64)
        #expect(try CLI.run("convert", CLI.tournament, "--null", "maybe").status == 64)
        let directory = try CLI.run("convert", Corpus.packageRoot.path)
        #expect(directory.status == 66)
    }

    @Test func jsonSummaryForScripts() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("t.bplist").path
        let result = try CLI.run("--json", "convert", CLI.tournament, "-o", out)
        #expect(result.status == 0)
        #expect(result.outputText.contains(#""from": "json""#) && result.outputText.contains(#""to": "bplist""#))
    }
}
