import Foundation
import FuzzSupport
import SaveKit
import TestSupport
import Testing

/// Every input the fuzzers found (Regressions/README.md lists what each exposed) is replayed
/// through the same checks the fuzz targets make.
@Suite("Fuzzer regressions")
struct RegressionTests {
    static let inputs: [(codec: String, file: URL)] = {
        guard let root = Bundle.module.url(forResource: "Regressions", withExtension: nil) else { return [] }
        let codecs = ["binary-plist": "bplist", "json": "json", "xml-plist": "plist"]
        return codecs.sorted { $0.key < $1.key }.flatMap { folder, codec in
            ((try? FileManager.default.contentsOfDirectory(at: root.appendingPathComponent(folder), includingPropertiesForKeys: nil)) ?? [])
                .sorted { $0.path < $1.path }.map { (codec, $0) }
        }
    }()

    @Test func thereAreRegressionInputs() {
        #expect(!Self.inputs.isEmpty)
    }

    @Test(arguments: inputs.map { "\($0.codec):\($0.file.lastPathComponent)" })
    func replay(_ name: String) throws {
        let entry = try #require(Self.inputs.first { "\($0.codec):\($0.file.lastPathComponent)" == name })
        let codec = try CodecRegistry.builtIn.requireCodec(id: entry.codec)
        let problem = FuzzCheck.problem(codec, Array(try Data(contentsOf: entry.file)))
        #expect(problem == nil, "\(name): \(problem ?? "")")
    }

    /// Inputs the keyed-archive target found, through its own check.
    static let keyedInputs: [URL] = {
        guard let folder = Bundle.module.url(forResource: "Regressions", withExtension: nil)?.appendingPathComponent("keyed-archive") else { return [] }
        return ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []).sorted { $0.path < $1.path }
    }()

    @Test(arguments: keyedInputs.map(\.lastPathComponent))
    func replayKeyed(_ name: String) throws {
        let file = try #require(Self.keyedInputs.first { $0.lastPathComponent == name })
        let problem = FuzzCheck.keyedProblem(Array(try Data(contentsOf: file)))
        #expect(problem == nil, "\(name): \(problem ?? "")")
    }

    @Test func subnormalDateFractionsSurviveTypedJSON() throws {
        // A subnormal, parsed: as a literal it draws a warning.
        let date = SaveValue.date(Date(timeIntervalSinceReferenceDate: Double("5.4e-312")!))
        let json = try Codecs.compactJSON(["d": date])
        #expect(json == #"{"d":{"$date":5.4e-312}}"#)
        #expect(try Codecs.value(json) == ["d": date])
    }
}
