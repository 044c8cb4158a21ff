import Foundation
import TestSupport
import Testing

@Suite("savetool set, killed")
struct EditCrashTests {
    /// SIGKILL at 12 moments spread over `set` of a 1.3 MB save reached through a symbolic link:
    /// after every kill the link is still the same link, and the save it leads to is whole, its
    /// old bytes or its new ones, never a mix and never a new file in the link's place.
    @Test func killedEditsThroughALinkLeaveTheSaveWhole() throws {
        let root = try Processes.temporaryDirectory("edit-crash")
        defer { try? FileManager.default.removeItem(at: root) }
        let real = root.appendingPathComponent("real"), device = root.appendingPathComponent("device")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
        let records = (0..<30_000).map { #"{"id":\#($0),"name":"level-\#($0)","stars":\#($0 % 4)}"# }
        let original = Data(#"{"marker":"before","levels":[\#(records.joined(separator: ","))]}"#.utf8)
        #expect(original.count > 1_000_000)
        let target = real.appendingPathComponent("save.json").path, link = device.appendingPathComponent("save.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../real/save.json")
        func linkTarget() -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: link) }

        // One run, not killed, on a copy: how long an edit takes, and the bytes it writes.
        let copy = real.appendingPathComponent("copy.json").path
        try original.write(to: URL(fileURLWithPath: copy))
        let started = Date()
        let measured = try CLI.run("set", copy, "/marker", #""after""#)
        let fullRun = Date().timeIntervalSince(started)
        #expect(measured.status == 0, "\(measured.errors)")
        let edited = try Data(contentsOf: URL(fileURLWithPath: copy))
        #expect(edited != original)
        try FileManager.default.removeItem(atPath: copy)

        var outcomes = (old: 0, new: 0), killed = 0
        for round in 0..<12 {
            try original.write(to: URL(fileURLWithPath: target))
            let delay = fullRun * (Double(round) + 0.5) / 12
            if try Processes.runKilled(after: delay, [CLI.executable, "set", link, "/marker", #""after""#]) { killed += 1 }

            let moment = "round \(round) (killed after \(Int(delay * 1000)) ms)"
            #expect(linkTarget() == "../real/save.json", "\(moment): the link was replaced")
            let now = try Data(contentsOf: URL(fileURLWithPath: target))
            #expect(now == original || now == edited, "\(moment): the save is neither its old nor its new bytes (\(now.count) bytes)")
            if now == original { outcomes.old += 1 } else if now == edited { outcomes.new += 1 }
            // Whatever a kill left unfinished lies beside the save, never beside the link.
            #expect(try FileManager.default.contentsOfDirectory(atPath: device.path) == ["save.json"], "\(moment)")
            for leftover in try FileManager.default.contentsOfDirectory(atPath: real.path) where leftover != "save.json" {
                #expect(leftover.hasPrefix(".save.json.savetool-"), "\(moment): \(leftover) beside the save")
            }
        }
        #expect(killed > 0)
        #expect(outcomes.old > 0, "old \(outcomes.old), new \(outcomes.new)")
    }
}
