/// What a write does with a symbolic link where its file goes.
///
/// A path the user named is written through (``follow``): editing `save.json`, a link to the
/// save in a shared folder, edits the save and keeps the link, as a shell's `>` and plutil do.
/// A file found by walking a folder follows only a link that stays inside it
/// (``followWithin(_:)``): a link planted in a save folder never leads a migration or a sync
/// to write elsewhere. A file the tool keeps for itself (a sync state, a backup) replaces a
/// link found in its place (``replace``), and is never written through one.
public enum LinkPolicy: Sendable, Equatable {
    /// The link is replaced by the new file.
    case replace
    /// The file the link leads to is replaced, and the link stays.
    case follow
    /// As ``follow``, for a link leading to a file inside the folder; one leading out of it
    /// is refused, and left as it is.
    case followWithin(String)
}
