import Foundation
@testable import SaveKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A new file a batch writes is made unnamed and named once whole; where naming fails or the
/// name is taken meanwhile, it still lands whole, with its mode, or is refused as asked.
@Suite("Atomic writes of new files", .serialized)
struct AtomicFileOutputTests {
    func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    func write(_ text: String, to path: String, mode: mode_t? = nil, replacing: Bool = true, between: () throws -> Void = {}) throws {
        let output = try AtomicFileOutput(path: path, durable: false, mode: mode)
        try Array(text.utf8).withUnsafeBytes { try output.write($0) }
        try between()
        try output.commit(replacing: replacing)
    }

    @Test func aNewFileLandsWholeWithItsModeAndNothingBesideIt() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/save.json"
        try write("{}\n", to: path, mode: 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{}\n" && mode(path) == 0o600)
        // Modes past the umask are set exactly, not left to it.
        let wide = directory.path + "/wide.json"
        try write("{}\n", to: wide, mode: 0o666)
        #expect(mode(wide) == 0o666)
        // Aborted, it leaves nothing: no temporary name was ever made.
        let output = try AtomicFileOutput(path: directory.path + "/never.json", durable: false)
        try Array("x".utf8).withUnsafeBytes { try output.write($0) }
        output.abort()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["save.json", "wide.json"])
    }

    @Test func aNameTakenMeanwhileIsReplacedOnlyWhenAsked() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/save.json"
        try write("new\n", to: path) { try Data("other\n".utf8).write(to: URL(fileURLWithPath: path)) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new\n")
        let exclusive = directory.path + "/exclusive.json"
        #expect(throws: FileError.cannotCreate(path: exclusive, reason: "file exists")) {
            try write("new\n", to: exclusive, replacing: false) { try Data("other\n".utf8).write(to: URL(fileURLWithPath: exclusive)) }
        }
        #expect(try String(contentsOfFile: exclusive, encoding: .utf8) == "other\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["exclusive.json", "save.json"])
    }

    @Test func aRefusedLinkFallsBackToACopyUnderATemporaryName() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let link = AtomicFileOutput.linkUnnamed
        AtomicFileOutput.linkUnnamed = { _, _ in
            errno = EPERM
            return -1
        }
        defer { AtomicFileOutput.linkUnnamed = link }
        let path = directory.path + "/save.json"
        let text = String(repeating: "0123456789", count: 100_000)
        try write(text, to: path, mode: 0o640)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text && mode(path) == 0o640)
        // Taken meanwhile, and the link refused too: still replaced, or refused, as asked.
        try write("new\n", to: path) { try Data("other\n".utf8).write(to: URL(fileURLWithPath: path)) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new\n")
        let exclusive = directory.path + "/exclusive.json"
        #expect(throws: FileError.self) {
            try write("new\n", to: exclusive, replacing: false) { try Data("other\n".utf8).write(to: URL(fileURLWithPath: exclusive)) }
        }
        #expect(try String(contentsOfFile: exclusive, encoding: .utf8) == "other\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["exclusive.json", "save.json"])
    }
}
