import Foundation
@testable import SaveArchive
import SaveKit
import Testing

/// The manifest is read entry by entry from spooled bytes, and the checks that relate entries
/// (each path once, nothing inside a file, hard links to earlier files) keep no table of every
/// path when the entries come in export's order. The same manifest must give the same entries
/// and the same refusals whether its bytes are in memory or spilled to a temporary file, and
/// whether it is in export's order or not.
@Suite("manifest reader")
struct ManifestReaderTests {
    static let digest = String(repeating: "0", count: 64)

    static func manifest(_ entries: [String]) -> [UInt8] {
        Array(("{\"format\": \"savetool.bundle/2\", \"source\": \"s\", \"files\": [\n" + entries.joined(separator: ",\n") + "\n]}\n").utf8)
    }

    /// The members every entry has: what a restore gives a file or folder.
    static let restored = #""mode": "0644", "modifiedAt": "2026-11-20T21:14:03Z""#
    static func file(_ path: String, size: Int = 1) -> String { #"{"path": "\#(path)", "size": \#(size), "sha256": "\#(digest)", \#(restored)}"# }
    static func directory(_ path: String) -> String { #"{"path": "\#(path)", "type": "directory", \#(restored)}"# }
    static func hardLink(_ path: String, to target: String) -> String { #"{"path": "\#(path)", "type": "hardlink", "target": "\#(target)", \#(restored)}"# }

    /// Reads `bytes` from memory and from a spool that spills past 256 bytes.
    static func readBothWays(_ bytes: [UInt8]) throws -> [(summary: BundleSummary, files: [BundleManifest.File], held: Bool)] {
        try [Spool(), Spool(memoryLimit: 256)].map { spool in
            try spool.append(contentsOf: bytes)
            let checked = try ManifestReader.read(spool, bundle: "b.tar.gz", maxEntries: 1_000_000)
            var files: [BundleManifest.File] = []
            try checked.entries.forEach { index, file in
                #expect(index == files.count)
                files.append(file)
            }
            return (checked.summary, files, checked.entries.held != nil)
        }
    }

    /// The refusal of `bytes`, the same from memory and from a spilled spool.
    static func refusal(_ bytes: [UInt8]) -> String? {
        let messages = [Spool(), Spool(memoryLimit: 256)].map { spool -> String? in
            do {
                try spool.append(contentsOf: bytes)
                _ = try ManifestReader.read(spool, bundle: "b.tar.gz", maxEntries: 1_000_000)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(messages[0] == messages[1])
        return messages[0]
    }

    @Test func aLargeManifestReadsTheSameFromMemoryAndFromAFile() throws {
        // 12,000 entries in export's order: more than are held, so they are gone through again from records.
        var entries: [String] = []
        for folder in 0..<40 {
            let name = "slot-\(folder < 10 ? "0" : "")\(folder)"
            entries.append(Self.directory(name))
            for index in (0..<299).map({ "save-\($0).json" }).sorted() { entries.append(Self.file("\(name)/\(index)", size: folder)) }
        }
        let bytes = Self.manifest(entries)
        let readings = try Self.readBothWays(bytes)
        #expect(readings.allSatisfy { !$0.held })
        for reading in readings {
            #expect(reading.summary.entryCount == 12_000 && reading.summary.fileCount == 11_960)
            #expect(reading.summary.byteCount == Int64((0..<40).reduce(0) { $0 + $1 * 299 }))
            #expect(reading.files.count == 12_000 && reading.files[1].path == "slot-00/save-0.json" && reading.files.last?.path == "slot-39/save-99.json")
        }
        #expect(readings[0].files == readings[1].files)
        // `files` is taken to end where the document does: a member after it (an array, whose
        // `]` is then the last) makes that guess wrong, and the manifest is read again without it.
        for tail in [#", "after": [1, [2]]"#, #", "label": "x""#, #", "files2": []"#, #", "label": "x", "after": [1]"#] {
            var later = Array(bytes.dropLast(3))  // "]}\n"
            later += Array(("]" + tail + "}\n").utf8)
            for reading in try Self.readBothWays(later) {
                #expect(reading.files == readings[0].files, "\(tail)")
                // A member after `files` is read too, also where the guess swallowed it at first.
                #expect(reading.summary.label == (tail.contains("label") ? "x" : nil), "\(tail)")
            }
        }
        // `format` after `files`, behind an array: the first reading misses it, the second finds it.
        var formatLast = Array(#"{"source": "s", "files": [\#(Self.directory("a"))], "format": "savetool.bundle/2", "n": [1]}"#.utf8)
        #expect(try Self.readBothWays(formatLast).allSatisfy { $0.files.map(\.path) == ["a"] && $0.summary.format == "savetool.bundle/2" })
        // A fault in an entry is reported as it is, whether or not the guess was right.
        formatLast = Array(#"{"format": "savetool.bundle/2", "files": [{"path": "../a", "type": "directory"}], "n": [1]}"#.utf8)
        #expect(Self.refusal(formatLast)?.contains("'..'") == true, "\(Self.refusal(formatLast) ?? "")")
        // A small manifest keeps its entries after the checks.
        #expect(try Self.readBothWays(Self.manifest([Self.directory("a"), Self.file("a/b")])).allSatisfy { $0.held && $0.files.count == 2 })
    }

    @Test func pathsOutOfExportsOrderAreCheckedAgainstEveryPath() throws {
        // Not in byte order: accepted, each path still checked against all the others.
        let shuffled = Self.manifest([Self.file("b"), Self.directory("a"), Self.file("a/x"), Self.file("c")])
        #expect(try Self.readBothWays(shuffled).allSatisfy { $0.files.map(\.path) == ["b", "a", "a/x", "c"] })
        #expect(Self.refusal(Self.manifest([Self.file("b"), Self.file("c"), Self.file("a"), Self.file("c")]))
            == "c: listed twice (or once more in another Unicode normalisation), expected each file once")
    }

    @Test func repeatsAndOtherSpellingsOfOneNameAreRefused() {
        let twice = "c: listed twice (or once more in another Unicode normalisation), expected each file once"
        #expect(Self.refusal(Self.manifest([Self.file("a"), Self.file("c"), Self.file("c")])) == twice)
        // NFC and NFD spellings, far apart in byte order.
        let composed = "caf\u{E9}.json", decomposed = "cafe\u{301}.json"
        let spellings = Self.manifest([Self.file(decomposed), Self.file("cafe-2.json"), Self.file("cafz.json"), Self.file(composed)])
        #expect(Self.refusal(spellings)?.hasSuffix("listed twice (or once more in another Unicode normalisation), expected each file once") == true)
        // U+212A KELVIN SIGN normalises to an ASCII K.
        let kelvin = Self.manifest([Self.file("K.json"), Self.file("L.json"), Self.file("\u{212A}.json")])
        #expect(Self.refusal(kelvin)?.hasSuffix("listed twice (or once more in another Unicode normalisation), expected each file once") == true)
        // The bytes of é written as escapes (ExactFileName) are a second spelling of é: refused,
        // in a path and in a link's target; the escape of a byte that is not UTF-8 is not.
        let escaped = "caf\u{EFC3}\u{EFA9}.json"
        #expect(Self.refusal(Self.manifest([Self.file(escaped)])) == "caf\\xC3\\xA9.json: caf\\xC3\\xA9.json spells as escapes bytes that are UTF-8, expected each name in its one spelling (docs/bundles.md)")
        #expect(Self.refusal(Self.manifest([Self.file("a"), Self.hardLink("b", to: escaped)]))?.contains("spells as escapes bytes that are UTF-8") == true)
        #expect(Self.refusal(Self.manifest([Self.file("caf\u{EFE9}.json")])) == nil)
        // Folders too: a format-2 manifest lists both spellings of a folder, and the second is refused.
        let folders = Self.manifest([
            Self.directory("cafe\u{301}"), Self.file("cafe\u{301}/b.json"), Self.directory("caf\u{E9}"), Self.file("caf\u{E9}/a.json"),
        ])
        #expect(Self.refusal(folders)?.hasSuffix("listed twice (or once more in another Unicode normalisation), expected each file once") == true)
    }

    /// A name in a message stays on one line and shows what it is: a bundle's entry cannot
    /// fake a line of output or send a terminal its escapes.
    @Test func namesInMessagesStayOnOneLine() {
        let hostile = "x\u{1B}[31mRED\nfake: ok\u{EFE9}.json"
        let mismatch = BundleImportError.mismatch(bundle: "b.tar.gz", entry: "files/" + hostile, reason: "its SHA-256 differs, expected the manifest's")
        #expect(mismatch.description == #"files/x\x1B[31mRED\nfake: ok\xE9.json: its SHA-256 differs, expected the manifest's"#)
        #expect(BundleError.unreadable(path: "saves/" + hostile, reason: "gone").path == #"saves/x\x1B[31mRED\nfake: ok\xE9.json"#)
        #expect(ArchiveError.malformed(archive: "b.tar", entry: hostile, message: "bad").description == #"entry x\x1B[31mRED\nfake: ok\xE9.json: bad"#)
        #expect(Self.refusal(Self.manifest([Self.file("a\\u0000b.json")])) == #"a\x00b.json: a NUL byte in the path, expected none"#)
        // A name quoted inside a reason (a manifest's own message, a link's target) too.
        #expect(Self.refusal(Self.manifest([#"{"path": "x\u001b[2Jy", "type": "fifo"}"#]))?.contains("\u{1B}") == false)
        #expect(Self.refusal(Self.manifest([#"{"path": "l", "type": "symlink", "target": "/etc/\n\u001b"}"#])) == #"l: a symbolic link to the absolute path /etc/\n\x1B, expected a target inside the save directory"#)
    }

    /// Lengths are counted in the bytes a name takes on disk: a byte that is not UTF-8 is one,
    /// though three in the manifest's spelling of it.
    @Test func aNameOfBytesThatAreNotUTF8IsAsLongAsItsBytes() {
        let stray = String(repeating: "\u{EFE9}", count: 255)
        #expect(BundleImporter.unsafePathReason(stray) == nil)
        #expect(BundleImporter.unsafePathReason(stray + "\u{EFE9}") == "a name longer than 255 bytes")
        // 15 × 255 + 15 slashes + 254 = 4,094 bytes.
        let path = Array(repeating: stray, count: 15).joined(separator: "/") + "/" + String(repeating: "\u{EFE9}", count: 254)
        #expect(BundleImporter.unsafePathReason(path + "/a") == nil)
        #expect(BundleImporter.unsafePathReason(path + "/ab") == "a path longer than 4096 bytes")
    }

    @Test func nothingLiesInsideAFileOrALink() {
        // `a.x` comes between `a` and `a/b` in byte order.
        #expect(Self.refusal(Self.manifest([Self.file("a"), Self.file("a.x"), Self.file("a/b")])) == "a/b: inside a, listed as a file, expected entries inside folders only")
        let link = #"{"path": "a", "type": "symlink", "target": "d", \#(Self.restored)}"#
        #expect(Self.refusal(Self.manifest([link, Self.directory("d"), Self.file("a/b")]))
            == "a/b: inside a, a symbolic link, which an import never writes through, expected entries inside folders only")
        // Parents that are not listed (format 1, or a hand-made bundle) are fine.
        #expect(Self.refusal(Self.manifest([Self.file("a/b/c"), Self.file("a/d")])) == nil)
        // A "/" followed by a combining mark is one Character, and still a separator.
        #expect(Self.refusal(Self.manifest([Self.file("a"), Self.file("a/\u{301}b")])) == "a/\u{301}b: inside a, listed as a file, expected entries inside folders only")
        // Files in one folder, then in another below a file.
        #expect(Self.refusal(Self.manifest([Self.directory("d"), Self.file("d/x"), Self.file("d/y"), Self.file("e"), Self.file("e/z")])) == "e/z: inside e, listed as a file, expected entries inside folders only")
    }

    /// A mode or a time that is missing or cannot be read is refused with the path and what
    /// it held, never guessed: a private save was restored as 0644, and dated 1970, without a
    /// word. Each entry is read both ways: straight from its bytes, and decoded (a member that
    /// is not a plain string, or an unknown one, sends an entry to the decoder).
    @Test func aModeOrTimeThatCannotBeReadIsRefused() {
        let digest = Self.digest
        func entry(_ members: String) -> [String] {
            [#"{"path": "a", "size": 1, "sha256": "\#(digest)", \#(members)}"#, #"{"path": "a", "size": 1, "sha256": "\#(digest)", "unknown": 1, \#(members)}"#]
        }
        let time = #""modifiedAt": "2026-11-20T21:14:03Z""#
        let cases: [(members: String, refusal: String)] = [
            (#""mode": "0600x", \#(time)"#, #"a has the mode "0600x", expected permission bits in octal, such as "0644" (at most 7777)"#),
            (#""mode": "banana", \#(time)"#, #"a has the mode "banana""#),
            (#""mode": "17777", \#(time)"#, #"a has the mode "17777""#),
            (#""mode": "", \#(time)"#, #"a has the mode """#),
            (#""mode": "-644", \#(time)"#, #"a has the mode "-644""#),
            // 0o200644 is 0o644 in 16 bits: no digits wrap into a mode that looks right.
            (#""mode": "200644", \#(time)"#, #"a has the mode "200644""#),
            (#""mode": "0000644", \#(time)"#, #"a has the mode "0000644""#),
            (time, #"a has no "mode", expected permission bits in octal, such as "0644" (at most 7777)"#),
            (#""mode": 420, \#(time)"#, #"a has the mode 420, expected"#),
            (#""mode": "0644", "modifiedAt": "yesterday""#, #"a has the modifiedAt "yesterday", expected an RFC 3339 time such as "2026-11-20T21:14:03Z" or @ and the seconds since 1970"#),
            (#""mode": "0644", "modifiedAt": "2026-13-45T99:00:00Z""#, #"a has the modifiedAt "2026-13-45T99:00:00Z""#),
            (#""mode": "0644", "modifiedAt": 12345"#, #"a has the modifiedAt 12345, expected"#),
            (#""mode": "0644", "modifiedAt": "@1.x""#, #"a has the modifiedAt "@1.x""#),
            (#""mode": "0644""#, #"a has no "modifiedAt", expected an RFC 3339 time such as "2026-11-20T21:14:03Z""#),
        ]
        for (members, refusal) in cases {
            for text in entry(members) {
                let message = Self.refusal(Self.manifest([text]))
                #expect(message?.contains(refusal) == true, "\(text): \(message ?? "taken")")
            }
        }
        // What export writes, and the modes and times it may write, are taken.
        for (mode, expected) in [("0644", 0o644), ("644", 0o644), ("4755", 0o4755), ("07777", 0o7777), ("0", 0)] as [(String, UInt16)] {
            for text in entry(#""mode": "\#(mode)", "modifiedAt": "@-0.5""#) {
                let files = try? Self.readBothWays(Self.manifest([text])).map(\.files)
                #expect(files?.allSatisfy { $0.map(\.mode) == [expected] && $0.map(\.modified) == [Timestamp(seconds: -1, nanoseconds: 500_000_000)] } == true, "\(text)")
            }
        }
    }

    @Test func aHardLinkLeadsToAFileListedBeforeIt() {
        #expect(Self.refusal(Self.manifest([Self.file("a"), Self.hardLink("b", to: "a")])) == nil)
        #expect(Self.refusal(Self.manifest([Self.hardLink("a", to: "b"), Self.file("b")]))
            == "a: a hard link to b, expected a file listed before it")
        #expect(Self.refusal(Self.manifest([Self.directory("a"), Self.hardLink("b", to: "a")]))
            == "b: a hard link to a, expected a file listed before it")
        #expect(Self.refusal(Self.manifest([Self.hardLink("b", to: "nowhere")])) == "b: a hard link to nowhere, expected a file listed before it")
    }

    /// Entries are made and checked on a second thread while the next ones are read: whichever
    /// thread finds a fault, the one reported is the earliest entry's. An unsafe path at entry
    /// 300, then broken JSON at entry 900, or the entry limit at 600: the path is reported.
    @Test func theEarliestFaultIsReportedWhicheverThreadFindsIt() throws {
        var entries = (0..<1000).map { Self.file(String(format: "f%04d", $0)) }
        entries[300] = Self.file("../x")
        var broken = entries
        broken[900] = #"{"path": "f0900", "size": 1,, "sha256": "x"}"#
        for (bytes, limit) in [(Self.manifest(entries), 1_000_000), (Self.manifest(broken), 1_000_000), (Self.manifest(entries), 600)] {
            for spool in [Spool(), Spool(memoryLimit: 256)] {
                try spool.append(contentsOf: bytes)
                #expect { try ManifestReader.read(spool, bundle: "b.tar.gz", maxEntries: limit) } throws: { error in
                    "\(error)".contains("../x") && !"\(error)".contains("more than") && !"\(error)".contains("expected a string key")
                }
            }
        }
    }

    @Test func aFaultInALargeManifestIsPlacedByItsByteOffset() throws {
        var entries = (0..<20).map { Self.file("f\($0 < 10 ? "0" : "")\($0)") }
        entries[12] = #"{"path": "f12", "size": 1,, "sha256": "x"}"#
        let bytes = Self.manifest(entries)
        let start = try #require(bytes.indices.first { bytes[$0...].starts(with: Array(#"{"path": "f12""#.utf8)) })
        // Small enough to decode whole: its line and column.
        #expect(Self.refusal(bytes)?.hasPrefix("manifest.json: 14:") == true)
        // Too large to decode whole: the byte offset of the entry, and what is wrong inside it.
        let spool = Spool(memoryLimit: 256)
        try spool.append(contentsOf: bytes)
        #expect {
            try ManifestReader.read(spool, bundle: "b.tar.gz", maxEntries: 100, wholeDocumentLimit: 100)
        } throws: { error in
            "\(error)".hasPrefix("manifest.json: at byte \(start): 1:") && "\(error)".contains("expected a string key")
        }
    }

    /// Past ``ManifestReader/heldEntries``, entries are gone through again from compact records
    /// rather than their JSON: every field comes back as it was, optional ones absent or not,
    /// in order, past the spool's 4 MiB in memory too.
    @Test func entriesComeBackFromTheirRecordsAsTheyWere() throws {
        var generator = SystemRandomNumberGenerator()
        let types: [BundleManifest.File.EntryType] = [.file, .directory, .symlink, .hardlink]
        let names = ["save.json", "Zoë/玩家.plist", "a b/c\u{0}d", "🎮", String(repeating: "x", count: 300)]
        var files: [BundleManifest.File] = []
        for index in 0..<(ManifestReader.heldEntries * 3) {
            let type = types[index % types.count]
            var file = BundleManifest.File(
                path: "\(index)/" + names[index % names.count], type: type, size: type == .file ? Int64.random(in: 0...Int64.max, using: &generator) : 0,
                sha256: type == .file ? String(repeating: "ab", count: 32) : "", mode: UInt16.random(in: 0...0o7777, using: &generator),
                modified: Timestamp(seconds: Int64.random(in: -1 << 40...1 << 40, using: &generator), nanoseconds: Int32.random(in: 0..<1_000_000_000, using: &generator)))
            if index % 3 == 0 { file.target = "../" + names[(index + 1) % names.count] }
            if index % 5 != 0 { file.owner = (UInt32.random(in: 0...UInt32.max, using: &generator), UInt32(index)) }
            if index % 7 == 0 { file.xattrs = ["user.a": [], "user.é": Array((0..<(index % 40)).map { UInt8(truncatingIfNeeded: $0) })] }
            file.sparse = index % 11 == 0
            if index % 2 == 0 { file.codec = ["json", "bplist"][index % 4 / 2] }
            if index % 13 == 0 { (file.kind, file.version) = ("tournament", index % 26 == 0 ? nil : -index) }
            files.append(file)
        }
        var builder = ManifestEntries.Builder()
        for file in files { try builder.append(file) }
        var back: [BundleManifest.File] = []
        try builder.entries.forEach { index, file in
            #expect(index == back.count)
            back.append(file)
        }
        #expect(back.count == files.count)
        for (original, copy) in zip(files, back) where original != copy {
            Issue.record("\(original.path) came back as \(copy)")
        }
        // Twice: a second pass reads the same records again.
        var count = 0
        try builder.entries.forEach { _, _ in count += 1 }
        #expect(count == files.count)
    }

    /// A file time outside the years 1 to 9999 (tmpfs, XFS and Btrfs hold them; RFC 3339 cannot
    /// spell them) is written as `@` and the seconds as a decimal number, and read back exactly,
    /// not as 1970: `@-100000000000.5` is half a second before −100000000000, which `timespec`
    /// holds as −100000000001 seconds and 5e8 nanoseconds.
    @Test func timesRFC3339CannotSpellComeBackExactly() throws {
        let times = [
            Timestamp(seconds: -100_000_000_001, nanoseconds: 500_000_000), Timestamp(seconds: 253_402_300_800),
            Timestamp(seconds: 999_999_999_999, nanoseconds: 123_456_789), Timestamp(seconds: -62_135_596_802, nanoseconds: 999_999_999),
            Timestamp(seconds: -100_000_000_000), Timestamp(seconds: 1_763_712_000, nanoseconds: 5),
        ]
        #expect(times.map(\.description) == [
            "@-100000000000.5", "@253402300800", "@999999999999.123456789", "@-62135596801.000000001", "@-100000000000",
            "2025-11-21T08:00:00.000000005Z",
        ])
        // What a reader of decimal numbers makes of each `@` form is the time itself.
        for time in times where time.description.hasPrefix("@") {
            let decimal = Decimal(string: String(time.description.dropFirst()))!
            #expect(decimal == Decimal(time.seconds) + Decimal(Int(time.nanoseconds)) / 1_000_000_000, "\(time.description)")
        }
        #expect(Timestamp(parsing: "@-0.25") == Timestamp(seconds: -1, nanoseconds: 750_000_000))
        #expect(Timestamp(parsing: "@-0") == Timestamp(seconds: 0))
        // The extremes `timespec` holds come back too.
        for time in [Timestamp(seconds: .min), Timestamp(seconds: .min, nanoseconds: 1), Timestamp(seconds: .max, nanoseconds: 999_999_999)] {
            #expect(Timestamp(parsing: time.description) == time, "\(time.description)")
        }
        var entries: [String] = []
        for (index, time) in times.enumerated() {
            #expect(Timestamp(parsing: time.description) == time, "\(time.description)")
            let file = BundleManifest.File(path: "f\(index)", type: .directory, mode: 0o755, modified: time)
            entries.append(String(decoding: BundleManifest.encodedEntry(file, first: index == 0).drop { $0 == UInt8(ascii: ",") || $0 == 0x0A || $0 == 0x20 }, as: UTF8.self))
        }
        for reading in try Self.readBothWays(Self.manifest(entries)) {
            #expect(reading.files.map(\.modified) == times)
        }
        for text in ["@", "@x", "@1.", "@1.1234567890", "@1.-5", "@ 1", "@-", "@--1", "@+1", "@-.5", "@-9223372036854775808.5", "@-9223372036854775809", "@9223372036854775808"] {
            #expect(Timestamp(parsing: text) == nil, "\(text)")
        }
    }

    /// Entries of export's plain shape are read straight from their bytes; anything else is
    /// decoded as JSON. Both ways must agree wherever the first takes an entry: checked on
    /// entries export writes, and on thousands of variations of them (escapes, unknown and
    /// repeated keys, other types, signs, fractions, leading zeros, bad UTF-8, spacing).
    @Test func entriesReadFromTheirBytesAgreeWithTheDecoder() throws {
        func decoded(_ bytes: [UInt8]) -> ManifestEntryFields? { (try? JSONCodec().decode(bytes)).map(ManifestEntryFields.init) }
        func scanned(_ bytes: [UInt8]) -> ManifestEntryFields? { bytes.withUnsafeBytes(ManifestEntryFields.init(scanning:)) }
        func same(_ a: ManifestEntryFields, _ b: ManifestEntryFields) -> Bool {
            (a.path, a.type, a.size, a.sha256, a.mode, a.modified) == (b.path, b.type, b.size, b.sha256, b.mode, b.modified)
                && (a.target, a.uid, a.gid, a.codec, a.kind, a.version) == (b.target, b.uid, b.gid, b.codec, b.kind, b.version) && a.sparse == b.sparse
                && a.xattrs.map(\.name) == b.xattrs.map(\.name) && a.xattrs.map(\.value) == b.xattrs.map(\.value)
        }
        // What export writes: every one is read from its bytes.
        var file = BundleManifest.File(path: "Zoë/玩家 1.json", type: .file, size: 1234, sha256: String(repeating: "ab", count: 32), mode: 0o640, modified: Timestamp(seconds: 1_763_712_000, nanoseconds: 5))
        (file.owner, file.codec, file.kind, file.version, file.sparse) = ((501, 20), "json", "kape.tournament", 3, true)
        var link = BundleManifest.File(path: "latest", type: .symlink, mode: 0o777, modified: Timestamp(seconds: -5))
        link.target = "Zoë/玩家 1.json"
        for entry in [file, link, BundleManifest.File(path: "a", type: .directory, mode: 0o1777, modified: Timestamp(seconds: 0))] {
            let bytes = Array(BundleManifest.encodedEntry(entry, first: true))
            let fast = try #require(scanned(bytes), "\(String(decoding: bytes, as: UTF8.self))")
            #expect(same(fast, try #require(decoded(bytes))), "\(String(decoding: bytes, as: UTF8.self))")
        }
        // Variations, from a seeded generator so that a failure can be run again.
        var state: UInt64 = 0x5EED
        func pick(_ count: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % count
        }
        let values: [String: [String]] = [
            "path": [#""a/b.json""#, #""Zoë""#, #""a\u0062""#, #""""#, "5", "null", "\"\u{1}\"", #""\"""#],
            "type": [#""file""#, #""directory""#, #""symlink""#, #""hardlink""#, #""fifo""#, "true", "null"],
            "size": ["0", "12", "9223372036854775807", "9223372036854775808", "-1", "-0", "012", "1.0", "1e3", "1E3", #""12""#, "null"],
            "sha256": ["\"\(String(repeating: "ab", count: 32))\"", #""AB""#, "7"],
            "mode": [#""0644""#, #""7777""#, #""x""#, "420"],
            "modifiedAt": [
                #""2026-11-24T14:11:59.25504319Z""#, #""@-5.5""#, "0", #""x""#, #""@x""#, #""Zoë""#, #""2026-02-30T00:00:00Z""#,
                #""2026-11-24T14:11:59.1234567890Z""#, #""2026-11-24T14:11:59Zé""#, #""@5.""#,
            ],
            "target": [#""x""#, #""../x""#, #""\/x""#, "[]"],
            "uid": ["0", "4294967295", "4294967296", "-1"], "gid": ["0", "20", "1.5"],
            "codec": [#""json""#, "{}"], "kind": [#""k""#, "false"], "version": ["1", "-3", "2.0", "100000000000000000000"],
            "sparse": ["true", "false", "1", "null", "tru"],
            "xattrs": [#"{"user.a": "YQ=="}"#, "{}"], "other": ["1"], "pa\\u0074h": [#""escaped key""#],
        ]
        let keys = values.keys.sorted()
        var (fromBytes, decodedOnly) = (0, 0)
        for _ in 0..<5000 {
            var members: [String] = []
            for _ in 0..<(1 + pick(8)) {
                let key = keys[pick(keys.count)]
                let choices = values[key]!
                // Mostly the first (valid) value, so that many entries stay plain.
                let value = pick(3) == 0 ? choices[pick(choices.count)] : choices[0]
                members.append([#""\#(key)":\#(value)"#, #" "\#(key)" : \#(value) "#, "\n\"\(key)\":\t\(value)"][pick(3)])
            }
            var bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
            if pick(20) == 0 { bytes.insert(0xFF, at: pick(bytes.count)) }  // not UTF-8
            if pick(30) == 0 { bytes.removeLast(1 + pick(min(3, bytes.count))) }  // cut short
            let text = String(decoding: bytes, as: UTF8.self)
            guard let fast = scanned(bytes) else {
                decodedOnly += 1
                continue
            }
            fromBytes += 1
            // Followed by more of the array, the same entry, ending where it ends.
            let followed = bytes + Array(#",{"path": "next"}]"#.utf8)
            let element = followed.withUnsafeBytes { ManifestEntryFields.element(at: $0) }
            #expect(element?.length == bytes.count && element.map { same($0.0, fast) } == true, "\(text)")
            let slow = decoded(bytes)
            #expect(slow != nil, "read from its bytes, yet the decoder refuses it: \(text)")
            if let slow { #expect(same(fast, slow), "\(text)") }
        }
        // Not a vacuous pass: both ways came up many times.
        #expect(fromBytes > 500, "\(fromBytes)")
        #expect(decodedOnly > 500, "\(decodedOnly)")
    }

    /// The totals a manifest declares count a sparse file's bytes apart, as the reader counts
    /// what an import writes; a manifest whose totals are not its entries' is refused, the same
    /// from memory and from a spilled spool.
    @Test func declaredTotalsAreTheEntriesOwnSparseBytesApart() throws {
        let time = Timestamp(seconds: 1_763_712_000)
        var sparse = BundleManifest.File(path: "disk.img", size: 3 << 30, sha256: Self.digest, mode: 0o644, modified: time)
        sparse.sparse = true
        let files = [
            BundleManifest.File(path: "Saves", type: .directory, mode: 0o700, modified: time),
            BundleManifest.File(path: "Saves/a.json", size: 12, sha256: Self.digest, mode: 0o644, modified: time),
            sparse,
        ]
        let manifest = BundleManifest(createdAt: Date(timeIntervalSince1970: 0), createdBy: "test", label: nil, source: "s", sourcePath: nil, files: files)
        let bytes = try manifest.encoded()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""totals": {"entries":3,"files":2,"bytes":3221225484,"sparseBytes":3221225472},"#), "\(text)")
        for read in try Self.readBothWays(bytes) { #expect(read.files.count == 3 && read.summary.byteCount == 3_221_225_484) }
        for (declared, lie) in [("\"sparseBytes\":3221225472", "\"sparseBytes\":3221225471"), ("\"entries\":3", "\"entries\":4")] {
            let message = Self.refusal(Array(text.replacingOccurrences(of: declared, with: lie).utf8))
            #expect(message?.contains("where its \"totals\" declare") == true, "\(lie): \(message ?? "accepted")")
        }
    }
}

