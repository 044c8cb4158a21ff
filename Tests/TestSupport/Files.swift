import Foundation

/// Listing what a test wrote.
public enum Files {
    /// The regular files under `root`, as sorted paths relative to it (directories and links left out).
    public static func regularFiles(under root: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []).filter { path in
            (try? FileManager.default.attributesOfItem(atPath: root + "/" + path)[.type] as? FileAttributeType) == .typeRegular
        }.sorted()
    }
}
