import Foundation
import SaveKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Reasons in messages are the short ones people read, whichever layer failed: never
/// Foundation's sentence ("The operation could not be completed. You don't have permission.").
@Suite("file errors")
struct FileErrorTests {
    @Test func foundationsErrorsBecomeShortReasons() throws {
        #expect(FileError.reason(of: CocoaError(.fileWriteNoPermission)) == "permission denied")
        #expect(FileError.reason(of: CocoaError(.fileReadNoSuchFile)) == "no such file or directory")
        #expect(FileError.reason(of: CocoaError(.fileWriteOutOfSpace)) == "no space left on the device")
        #expect(FileError.reason(of: CocoaError(.fileWriteVolumeReadOnly)) == "read-only file system")
        let underlying = NSError(domain: NSCocoaErrorDomain, code: CocoaError.Code.fileWriteUnknown.rawValue, userInfo: [NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(EDQUOT))])
        #expect(FileError.reason(of: underlying) == "disk quota exceeded")
        #expect(FileError.reason(of: FileError.cannotCreate(path: "p", reason: "permission denied")) == "permission denied")

        // A real failure of Foundation's: a folder asked for inside a file.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("file-error-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        do {
            try FileManager.default.createDirectory(atPath: file.path + "/inside", withIntermediateDirectories: true)
            Issue.record("a folder was made inside a file")
        } catch {
            #expect(FileError.reason(of: error) == "not a directory")
        }
    }
}
