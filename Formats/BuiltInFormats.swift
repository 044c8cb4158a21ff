import Foundation

/// The save kinds that ship inside savetool: each folder beside this file is one kind
/// (`kind.json`, `migrations.json`, `schema-v<N>.json`), copied into the binary's resources.
public enum BuiltInFormats {
    /// The directory holding the built-in kind folders.
    public static var directory: URL? {
        Bundle.module.resourceURL
    }
}
