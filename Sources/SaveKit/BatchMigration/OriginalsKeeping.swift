/// Keeps the files a batch is about to replace, before it replaces them: what makes a migration
/// in place safe to run on the only copy of a save.
///
/// SaveKit writes no archives; the bundle keeper of SaveArchive (`OriginalsKeeper`) conforms,
/// and so can anything that keeps files somewhere else (a server's object store, a test's list).
public protocol OriginalsKeeping: Sendable {
    /// Keeps the files at the relative `paths` under `root`, durably, before this returns, and
    /// says where (`nil` when there was nothing to keep). `directory` and `name` say where the
    /// copy goes and what it is named after: beside the folder or file the batch was given.
    /// Called once for every folder or file given, with no paths too, so that a keeper can tidy
    /// what a killed run left.
    func keep(_ paths: [String]?, under root: String, in directory: String, name: String) throws -> String?
}
