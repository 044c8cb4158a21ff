/// The save kinds that ship inside savetool: each folder beside this file is one kind
/// (`kind.json`, `migrations.json`, `schema-v<N>.json`), compiled into the binary by the
/// `EmbedFormats` build plugin, so that the binary needs nothing beside it.
public enum BuiltInFormats {
    /// Each kind folder's files, by folder name and file name.
    public static var folders: [String: [String: String]] { embedded }
}
