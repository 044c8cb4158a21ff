import ArgumentParser

/// The parsing of every argument and option that names a file or a folder.
public enum PathArgument {
    /// Refuses an empty path. The system calls read `""` as the current folder
    /// (`import … --into "$DEST"` with `DEST` unset would replace it), so it is a usage error,
    /// never a place.
    public static func named(_ text: String) throws -> String {
        guard !text.isEmpty else { throw ValidationError("an empty path, expected a file or folder name (is a shell variable unset?)") }
        return text
    }
}
