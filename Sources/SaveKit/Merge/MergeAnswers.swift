/// Answers to a merge's conflicts, given ahead (`--answers A.json`), so that a merge that
/// stopped on conflicts can be run again unattended:
///
/// ```json
/// {"format": "savetool.merge-answers/1",
///  "answers": [
///    {"file": "Library/Preferences/com.example.blocks.plist", "path": "/gameSave/coins", "take": "remote"},
///    {"path": "/player_name", "value": "Zoë"}]}
/// ```
///
/// `take` is `local`, `remote` or `base`; `value` gives the value itself (typed JSON). An answer
/// without `file` applies to that path in every file; `path` `""` is the whole file.
public struct MergeAnswers: Sendable {
    public struct Answer: Sendable {
        public var file: String?
        public var path: JSONPointer
        public var resolution: ConflictResolution
    }

    public var answers: [Answer]

    public init(answers: [Answer]) { self.answers = answers }

    /// The answer for `path` in `file`: one naming the file first, then one for every file.
    public func resolution(file: String?, path: JSONPointer) -> ConflictResolution? {
        answerIndex(file: file, path: path).map { answers[$0].resolution }
    }

    /// Which answer settles `path` in `file` (its place in ``answers``): a front end tells the
    /// user of answers that settled nothing, a pointer mistyped most likely.
    public func answerIndex(file: String?, path: JSONPointer) -> Int? {
        answers.firstIndex { $0.file != nil && $0.file == file && $0.path == path }
            ?? answers.firstIndex { $0.file == nil && $0.path == path }
    }

    /// Parses an answers document; errors name the place in it.
    public init(parsing document: SaveValue) throws(FormatDefinitionError) {
        func fail(_ path: [String], _ message: String) -> FormatDefinitionError { FormatDefinitionError(at: JSONPointer(tokens: path), message: message) }
        /// What a member held, for "<found>, expected …": a string as it is, anything else by its type.
        func found(_ value: SaveValue?) -> String {
            guard let value else { return "missing" }
            guard let text = value.stringValue else { return value.typeNameWithArticle }
            return "\"\(ExactFileName.printable(String(text.prefix(60))))\""
        }
        guard document["format"]?.stringValue == "savetool.merge-answers/1" else {
            throw fail(["format"], "\(found(document["format"])), expected \"savetool.merge-answers/1\"")
        }
        guard let list = document["answers"]?.arrayValue else { throw fail(["answers"], "\(found(document["answers"])), expected an array of answers") }
        var answers: [Answer] = []
        for (index, item) in list.enumerated() {
            let at = ["answers", String(index)]
            guard let entry = item.dictionaryValue else { throw fail(at, "\(item.typeNameWithArticle), expected {\"path\", \"take\" or \"value\"}") }
            for key in entry.keys where !["file", "path", "take", "value"].contains(key) {
                throw fail(at + [key], "an unknown key, expected one of file, path, take, value")
            }
            guard let text = entry["path"]?.stringValue else { throw fail(at + ["path"], "\(found(entry["path"])), expected the JSON Pointer of the conflict") }
            let path: JSONPointer
            do { path = try JSONPointer(parsing: text) } catch { throw fail(at + ["path"], "\(error)") }
            let resolution: ConflictResolution
            switch (entry["take"], entry["value"]) {
            case (let take?, nil):
                guard let side = take.stringValue.flatMap(MergeSide.init(rawValue:)) else { throw fail(at + ["take"], "\(found(take)), expected \"local\", \"remote\" or \"base\"") }
                resolution = .take(side)
            case (nil, let value?): resolution = .value(value)
            default: throw fail(at, "expected one of \"take\" and \"value\"")
            }
            if let file = entry["file"], file.stringValue == nil { throw fail(at + ["file"], "\(file.typeNameWithArticle), expected the file's path") }
            let file = entry["file"]?.stringValue
            // Two answers to one conflict: which one holds is not for a merge to guess.
            if let earlier = answers.firstIndex(where: { $0.file == file && $0.path == path }) {
                let place = file.map { " in \($0)" } ?? ""
                throw fail(at, "a second answer to the conflict at \(path.displayText)\(place), expected one answer per conflict (/answers/\(earlier) answers it)")
            }
            answers.append(Answer(file: file, path: path, resolution: resolution))
        }
        self.init(answers: answers)
    }
}
