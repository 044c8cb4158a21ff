/// A mistake in a format definition — `migrations.json`, `schema-v<N>.json`, or a condition in
/// `kind.json` — naming the place in the file, so its author can go straight to it.
///
/// ``KindLoader`` adds the file's path (``KindLoader/LoadError``).
public struct FormatDefinitionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where in the file, as a JSON Pointer.
    public var at: JSONPointer
    public var message: String

    public init(at: JSONPointer, message: String) {
        self.at = at
        self.message = message
    }

    public var description: String { "\(at.displayText): \(message)" }
}
