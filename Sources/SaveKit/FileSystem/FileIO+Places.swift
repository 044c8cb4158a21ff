import Foundation

extension FileIO {
    /// `path` made real as far as it exists (``realPath(_:)``), with the rest (folders yet to
    /// be made) after it: where a path not made yet would be.
    public static func resolvedPath(_ path: String) -> String? {
        var existing = URL(fileURLWithPath: path).standardizedFileURL.path, rest: [String] = []
        while realPath(existing) == nil, existing != "/" {
            rest.insert(URL(fileURLWithPath: existing).lastPathComponent, at: 0)
            existing = parentDirectory(of: existing)
        }
        return realPath(existing).map { ([$0 == "/" ? "" : $0] + rest).joined(separator: "/") }
    }

    /// Whether `path` is `folder` or lies inside it, once both are made real
    /// (``resolvedPath(_:)``): a link or `..` does not hide it.
    public static func isInside(_ path: String, _ folder: String) -> Bool {
        guard let place = resolvedPath(path), let folder = resolvedPath(folder) else { return false }
        return place == folder || place.hasPrefix(folder == "/" ? "/" : folder + "/")
    }
}
