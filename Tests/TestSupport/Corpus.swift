import Foundation
import SaveKit
import Testing

/// The public conformance data the project is tested against, carried in the repository
/// (`Tests/Corpus`, each folder with its license and SOURCE.md; `SAVETOOL_CORPUS` points
/// elsewhere). See docs/conformance.md.
public enum Corpus {
    public static let root: URL = {
        if let path = ProcessInfo.processInfo.environment["SAVETOOL_CORPUS"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent("Tests/Corpus")
    }()

    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }

    public static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: url(relative)))
    }

    /// Files directly in a corpus folder, sorted; fails the test when the corpus is missing.
    public static func files(in folder: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url(folder).path)) ?? []
        if names.isEmpty {
            Issue.record("corpus folder \(url(folder).path) is missing or empty; set SAVETOOL_CORPUS", sourceLocation: sourceLocation)
        }
        return names.sorted().map { folder + "/" + $0 }
    }

    /// Files in a corpus folder, computed when the test list is built (for parameterized tests).
    public static func listing(_ folder: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url(folder).path)) ?? []
        return names.sorted().map { folder + "/" + $0 }
    }
}

/// Test helpers over the codecs.
public enum Codecs {
    public static let json = JSONCodec()
    public static let xml = XMLPlistCodec()
    public static let binary = BinaryPlistCodec()

    /// Parses typed JSON written in a test.
    public static func value(_ json: String) throws -> SaveValue {
        try JSONCodec().decode(Array(json.utf8))
    }

    public static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Encodes compactly, without the final newline.
    public static func compactJSON(_ value: SaveValue) throws -> String {
        var options = EncodingOptions()
        options.pretty = false
        return text(try JSONCodec().encode(value, options: options)).trimmingCharacters(in: .newlines)
    }
}
