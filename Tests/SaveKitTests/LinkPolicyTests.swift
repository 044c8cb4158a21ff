import Foundation
import SaveKit
import TestSupport
import Testing

/// Where an atomic write lands when a symbolic link stands where its file goes.
@Suite("Writes and symbolic links")
struct LinkPolicyTests {
    /// A folder with a save, a link to it inside, a link out of it, a dangling link and a loop.
    static func folder() throws -> (root: URL, folder: String, outside: String) {
        let root = try Processes.temporaryDirectory("link-policy")
        let folder = root.appendingPathComponent("saves").path, outside = root.appendingPathComponent("elsewhere.json").path
        try FileManager.default.createDirectory(atPath: folder + "/games", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: folder + "/games/real.json"))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: folder + "/inside.json", withDestinationPath: "games/real.json")
        try FileManager.default.createSymbolicLink(atPath: folder + "/out.json", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: folder + "/dangling.json", withDestinationPath: "games/new.json")
        try FileManager.default.createSymbolicLink(atPath: folder + "/loop-a", withDestinationPath: "loop-b")
        try FileManager.default.createSymbolicLink(atPath: folder + "/loop-b", withDestinationPath: "loop-a")
        return (root, folder, outside)
    }

    @Test func eachPolicyLandsWhereItSays() throws {
        let (root, folder, outside) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        // replace: the link itself, whatever it leads to.
        #expect(try FileIO.destination(of: folder + "/out.json", links: .replace) == folder + "/out.json")
        // follow: through any chain, to a file that need not exist yet.
        #expect(try FileIO.destination(of: folder + "/inside.json", links: .follow) == folder + "/games/real.json")
        #expect(try FileIO.destination(of: folder + "/out.json", links: .follow) == outside)
        #expect(try FileIO.destination(of: folder + "/dangling.json", links: .follow) == folder + "/games/new.json")
        #expect(try FileIO.destination(of: folder + "/plain.json", links: .follow) == folder + "/plain.json")
        // followWithin: inside the folder only, also when the folder is named through a link.
        #expect(try FileIO.destination(of: folder + "/inside.json", links: .followWithin(folder)) == folder + "/games/real.json")
        #expect(throws: FileError.self) { try FileIO.destination(of: folder + "/out.json", links: .followWithin(folder)) }
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("alias").path, withDestinationPath: "saves")
        #expect(try FileIO.destination(of: folder + "/inside.json", links: .followWithin(root.appendingPathComponent("alias").path)) == folder + "/games/real.json")
        // A loop is refused, never replaced by a file.
        #expect(throws: FileError.self) { try FileIO.destination(of: folder + "/loop-a", links: .follow) }
    }

    @Test func aWriteThroughALinkKeepsTheLinkAndAnExclusiveOneRefusesIt() throws {
        let (root, folder, outside) = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileIO.writeAtomically(Array("[1]".utf8), to: folder + "/out.json", links: .follow)
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "[1]")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/out.json")) == outside)
        // Created only where nothing is: a dangling link is something, and is not followed.
        let output = try AtomicFileOutput(path: folder + "/dangling.json", mode: 0o644)
        try Array("[2]".utf8).withUnsafeBytes { try output.write($0) }
        #expect(throws: FileError.self) { try output.commit(replacing: false) }
        #expect(!FileManager.default.fileExists(atPath: folder + "/games/new.json"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == ["dangling.json", "games", "inside.json", "loop-a", "loop-b", "out.json"])
    }
}

/// Removing a tree this process owns (a staging folder, a destination's old contents).
@Suite("Removing a tree")
struct RemoveTreeTests {
    /// Links are removed, never followed; folders that shut out their owner are opened first;
    /// names that are not UTF-8 go like any other.
    @Test func linksAreRemovedNotFollowedAndClosedFoldersOpened() throws {
        let root = try Processes.temporaryDirectory("remove-tree")
        defer { try? FileManager.default.removeItem(at: root) }
        let outside = root.appendingPathComponent("outside").path, tree = root.appendingPathComponent("tree").path
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: outside + "/precious.json"))
        try FileManager.default.createDirectory(atPath: tree + "/closed/inner", withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: tree + "/closed/inner/a.json"))
        try FileManager.default.createSymbolicLink(atPath: tree + "/to-outside", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: tree + "/closed/abs", withDestinationPath: outside + "/precious.json")
        #expect(try Processes.run(["python3", "-c", "import sys; open(sys.argv[1].encode() + b'/caf\\xe9', 'w').close()", tree]).status == 0)
        chmod(tree + "/closed/inner", 0o555)
        chmod(tree + "/closed", 0)
        #expect(FileIO.removeTree(tree) == nil)
        #expect(!FileManager.default.fileExists(atPath: tree))
        #expect(try String(contentsOfFile: outside + "/precious.json", encoding: .utf8) == "keep", "what a link leads to stays")
        var info = stat()
        #expect(stat(outside, &info) == 0 && info.st_mode & 0o777 == 0o755, "and keeps its mode")
        #expect(FileIO.removeTree(tree) == nil, "a tree already gone is no error")
    }
}
