import OrderedCollections

/// A changed document written over its JSON text so that only the bytes of what changed
/// change: a one-field edit of a file written by Python, by `JSONEncoder` or by hand is then a
/// one-line diff, whatever its spacing (`"key" : value`), inline arrays, escapes (`\u00eb`) or
/// number spellings (`2.50`).
///
/// It walks the old and new values together over the old text. A value that differs is written
/// where it stood, over lines (indented as its line is) where its neighbours stand on lines of
/// their own, else on one line; a key or element removed takes one separator with it; a new
/// key goes after the key before it in the new value (a renamed key where the old one stood,
/// with its value's text), an element at the end of its array, each spaced as its neighbours.
/// Where the text and the values do not line up one to one (a `{"$dict": …}` wrapper, keys in
/// a new order, an empty container that gains members) the whole value there is written again.
/// The caller checks the result by reading it back (``SaveCodec/encode(_:over:holding:decoding:options:report:)``).
struct JSONTextRewriter {
    private let text: [UInt8]
    private let codec: JSONCodec
    private let layout: EncodingOptions
    /// Replacements of the old text, in no particular order; they never overlap.
    private var edits: [(range: Range<Int>, bytes: [UInt8])] = []
    private var report = ValueLowering.Report()

    /// `new` written over `text`, a JSON document that reads as `old`; `nil` when the two do not
    /// line up at the root (the caller then writes the whole document).
    static func rewrite(
        _ text: [UInt8], from old: SaveValue, to new: SaveValue, codec: JSONCodec, layout: EncodingOptions, report: inout ValueLowering.Report
    ) throws -> [UInt8]? {
        var rewriter = JSONTextRewriter(text: text, codec: codec, layout: layout)
        guard let root = rewriter.root else { return nil }
        guard try rewriter.change(old, to: new, at: root) else { return nil }
        report.add(rewriter.report)
        var output: [UInt8] = []
        output.reserveCapacity(text.count + rewriter.edits.reduce(0) { $0 + $1.bytes.count })
        var position = 0
        for edit in rewriter.edits.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) {
            output.append(contentsOf: text[position..<edit.range.lowerBound])
            output.append(contentsOf: edit.bytes)
            position = edit.range.upperBound
        }
        output.append(contentsOf: text[position...])
        return output
    }

    /// The root value's bytes, after a byte order mark and spacing.
    private var root: Range<Int>?

    private init(text: [UInt8], codec: JSONCodec, layout: EncodingOptions) {
        self.text = text
        self.codec = codec
        self.layout = layout
        var start = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        start = skipSpace(from: start)
        if start < text.count { root = start..<endOfValue(at: start) }
    }

    // MARK: - Walking old and new together

    /// Records the edits that turn the text at `span` (which reads as `old`) into `new`.
    /// `inLines`: the container holding the value has its members on lines of their own.
    /// `false` when only a new document would do, which happens only at the root.
    private mutating func change(_ old: SaveValue, to new: SaveValue, at span: Range<Int>, inLines: Bool = false) throws -> Bool {
        if old == new { return true }
        switch (old, new) {
        case (.dictionary(let before), .dictionary(let after)) where text[span.lowerBound] == UInt8(ascii: "{"):
            if try changeDictionary(before, to: after, at: span) { return true }
        case (.array(let before), .array(let after)) where text[span.lowerBound] == UInt8(ascii: "["):
            if try changeArray(before, to: after, at: span) { return true }
        default:
            break
        }
        if span == root { return false }
        edits.append((span, try encode(new, multiline: writesOverLines(replacing: span, with: new, inLines: inLines), indentedAs: span.lowerBound)))
        return true
    }

    /// `false` when the text's members do not line up with `before`, the keys that stay are in
    /// another order in `after`, or `after` must be spelled another way (a lone marker key is
    /// wrapped in `{"$dict": …}`). New keys may come anywhere among the ones that stay: a key
    /// that a migration renames is written where the old one stood, with its value's text.
    private mutating func changeDictionary(
        _ before: OrderedDictionary<String, SaveValue>, to after: OrderedDictionary<String, SaveValue>, at span: Range<Int>
    ) throws -> Bool {
        let members = objectMembers(at: span)
        guard members.count == before.count, !members.isEmpty, zip(members, before.keys).allSatisfy({ $0.key == $1 }) else { return false }
        // `{"$dict": {…}}` reads as the dictionary inside: its one key is not the value's.
        if members.count == 1, members[0].key == "$dict", text[members[0].value.lowerBound] == UInt8(ascii: "{") { return false }
        if !layout.plainJSON, TypedJSON.needsWrapping(after) { return false }
        let kept = before.keys.filter { after[$0] != nil }
        guard !kept.isEmpty, after.keys.filter({ before[$0] != nil }).elementsEqual(kept) else { return false }
        let items = members.map { ($0.start, $0.value.upperBound) }
        let inLines = separator(before: members[0].start).contains(0x0A)
        var removed: [Int] = []
        for (index, member) in members.enumerated() {
            if let value = after[member.key] {
                _ = try change(before.values[index], to: value, at: member.value, inLines: inLines)
            } else {
                removed.append(index)
            }
        }
        // A renamed key's value keeps its text: a removed member's, where the value is the same.
        var renamedFrom = removed.map { (value: before.values[$0], text: members[$0].value) }
        func oldText(of value: SaveValue) -> Range<Int>? {
            guard let index = renamedFrom.firstIndex(where: { $0.value == value }) else { return nil }
            return renamedFrom.remove(at: index).text
        }
        // Each new key goes after the key that stays before it in `after`, or before the first.
        var leading: [String] = []
        var following: [Int: [String]] = [:]
        var previous: Int?
        for key in after.keys {
            if let index = before.index(forKey: key) {
                previous = index
            } else if let previous {
                following[previous, default: []].append(key)
            } else {
                leading.append(key)
            }
        }
        var tail: [UInt8] = []
        for (index, keys) in following {
            let member = members[index]
            var bytes: [UInt8] = []
            for key in keys {
                bytes.append(contentsOf: comma(after: index, of: items))
                bytes.append(contentsOf: separator(before: member.start))
                bytes.append(contentsOf: try self.member(key, after[key]!, spacedAs: member, inLines: inLines, reusing: oldText(of: after[key]!)))
            }
            // Where the keys after the last one that stays all go, the new ones take their place.
            if index == before.index(forKey: kept[kept.count - 1]), removed.last == members.count - 1 {
                tail = bytes
            } else {
                edits.append((member.value.upperBound..<member.value.upperBound, bytes))
            }
        }
        if !leading.isEmpty, let firstIndex = before.index(forKey: kept[0]) {
            let first = members[firstIndex]
            var bytes: [UInt8] = []
            for key in leading {
                bytes.append(contentsOf: try member(key, after[key]!, spacedAs: first, inLines: inLines, reusing: oldText(of: after[key]!)))
                bytes.append(contentsOf: comma(after: firstIndex, of: items))
                bytes.append(contentsOf: separator(before: first.start))
            }
            edits.append((first.start..<first.start, bytes))
        }
        removeRuns(removed, of: items, in: span, replacingTheLastWith: tail)
        return true
    }

    /// A new member spaced as `neighbour`: the key, the neighbour's colon, the value (the text at
    /// `reusing`, else written over lines where the members are, indented as the neighbour's line).
    private mutating func member(_ key: String, _ value: SaveValue, spacedAs neighbour: Member, inLines: Bool, reusing old: Range<Int>?) throws -> [UInt8] {
        var bytes = try encode(.string(key), multiline: false, indentedAs: nil)
        bytes.append(contentsOf: text[neighbour.keyEnd..<neighbour.value.lowerBound])
        if let old {
            bytes.append(contentsOf: text[old])
        } else {
            bytes.append(contentsOf: try encode(value, multiline: inLines && value.isNonEmptyContainer, indentedAs: neighbour.start))
        }
        return bytes
    }

    private mutating func changeArray(_ before: [SaveValue], to after: [SaveValue], at span: Range<Int>) throws -> Bool {
        let elements = arrayElements(at: span)
        guard elements.count == before.count, !elements.isEmpty, !after.isEmpty else { return false }
        let items = elements.map { ($0.lowerBound, $0.upperBound) }
        let inLines = separator(before: elements[0].lowerBound).contains(0x0A)
        var removed = before.count..<before.count
        if after.count < before.count {
            // One run taken out (a `remove` of one element): the elements after it keep their text.
            let gap = before.count - after.count
            let first = after.indices.first { before[$0] != after[$0] } ?? after.count
            removed = before[(first + gap)...].elementsEqual(after[first...]) ? first..<(first + gap) : after.count..<before.count
        }
        var next = 0
        for index in elements.indices where !removed.contains(index) {
            _ = try change(before[index], to: after[next], at: elements[index], inLines: inLines)
            next += 1
        }
        if after.count > before.count {
            let last = elements.count - 1
            var bytes: [UInt8] = []
            for value in after[before.count...] {
                bytes.append(contentsOf: comma(after: last, of: items))
                bytes.append(contentsOf: separator(before: elements[last].lowerBound))
                bytes.append(contentsOf: try encode(value, multiline: inLines && value.isNonEmptyContainer, indentedAs: elements[last].lowerBound))
            }
            edits.append((elements[last].upperBound..<elements[last].upperBound, bytes))
        }
        removeRuns(Array(removed), of: items, in: span)
        return true
    }

    /// Takes out the members (or elements) at `removed`, each run of neighbours with the
    /// separator on one side, so that what stays is spaced as before. A run at the end is
    /// replaced by `tail` (members that start with their comma). Callers keep at least one.
    private mutating func removeRuns(_ removed: [Int], of items: [(start: Int, end: Int)], in span: Range<Int>, replacingTheLastWith tail: [UInt8] = []) {
        var index = 0
        while index < removed.count {
            var end = index
            while end + 1 < removed.count, removed[end + 1] == removed[end] + 1 { end += 1 }
            let (first, last) = (removed[index], removed[end])
            if last + 1 < items.count {
                // Up to the next member's start: its own separator and spacing go.
                edits.append((items[first].start..<items[last + 1].start, []))
            } else if first > 0 {
                // The last ones: from the end of the member before, so its comma goes.
                edits.append((items[first - 1].end..<items[last].end, tail))
            } else {
                // All of them (no caller asks for this): `{}` or `[]`, as a writer writes an empty container.
                edits.append(((span.lowerBound + 1)..<(span.upperBound - 1), []))
            }
            index = end + 1
        }
    }

    // MARK: - Writing a value where another stood

    /// Whether a value written at `span` goes over several lines: where the old value did; where
    /// a non-empty container takes the place of a scalar or of an empty container among members
    /// on lines of their own; never where an inline container stood (`[1, 2]` stays on its line).
    private func writesOverLines(replacing span: Range<Int>, with value: SaveValue, inLines: Bool) -> Bool {
        if text[span].contains(0x0A) { return true }
        let inlineContainer = (text[span.lowerBound] == UInt8(ascii: "{") || text[span.lowerBound] == UInt8(ascii: "[")) && span.count > 2
        return inLines && !inlineContainer && value.isNonEmptyContainer
    }

    /// `value` as the codec writes it: over lines, its later lines indented as the line holding
    /// `position` is; or on one line, spaced after its commas and colons as the text's one-line
    /// containers are.
    private mutating func encode(_ value: SaveValue, multiline: Bool, indentedAs position: Int?) throws -> [UInt8] {
        var options = layout
        options.pretty = multiline
        options.byteOrderMark = false
        options.finalNewline = false
        let bytes = try codec.encode(value, options: options, report: &report)
        if !multiline {
            guard value.isNonEmptyContainer else { return bytes }
            let spacing = inlineSpacing()
            guard !spacing.comma.isEmpty || !spacing.colon.isEmpty else { return bytes }
            var spaced: [UInt8] = []
            spaced.reserveCapacity(bytes.count + bytes.count / 4)
            var inString = false
            var escaped = false
            for byte in bytes {
                spaced.append(byte)
                if inString {
                    if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                } else if byte == UInt8(ascii: "\"") {
                    inString = true
                } else if byte == UInt8(ascii: ",") {
                    spaced.append(contentsOf: spacing.comma)
                } else if byte == UInt8(ascii: ":") {
                    spaced.append(contentsOf: spacing.colon)
                }
            }
            return spaced
        }
        guard let position, bytes.contains(0x0A) else { return bytes }
        let lead = lineLead(at: position)
        guard !lead.isEmpty else { return bytes }
        var indented: [UInt8] = []
        indented.reserveCapacity(bytes.count + lead.count * 8)
        for byte in bytes {
            indented.append(byte)
            if byte == 0x0A { indented.append(contentsOf: lead) }
        }
        return indented
    }

    /// The spaces and tabs that open the line holding `position`.
    private func lineLead(at position: Int) -> ArraySlice<UInt8> {
        var start = position
        while start > 0, text[start - 1] != 0x0A { start -= 1 }
        var end = start
        while end < position, text[end] == 0x20 || text[end] == 0x09 { end += 1 }
        return text[start..<end]
    }

    // MARK: - Reading the text's shape

    private struct Member {
        var start: Int
        var keyEnd: Int
        var key: String
        var value: Range<Int>
    }

    /// An object's members in text order; a key that does not read as a string, or a text that
    /// does not read as JSON (the caller's mistake: never a loop without end), gives none.
    private func objectMembers(at span: Range<Int>) -> [Member] {
        var members: [Member] = []
        var position = skipSpace(from: span.lowerBound + 1)
        while position < span.upperBound - 1, text[position] == UInt8(ascii: "\"") {
            let keyEnd = endOfValue(at: position)
            guard keyEnd >= position + 2 else { return [] }
            let spelled = text[(position + 1)..<(keyEnd - 1)]
            let key: String
            if !spelled.contains(UInt8(ascii: "\\")) {
                key = String(decoding: spelled, as: UTF8.self)  // valid UTF-8: the text has been read
            } else if case .string(let unescaped)? = try? JSONReader.parse(Array(text[position..<keyEnd]), options: DecodingOptions()) {
                key = unescaped
            } else {
                return []
            }
            let valueStart = skipSpace(from: skipSpace(from: keyEnd) + 1)  // past the colon
            let valueEnd = endOfValue(at: valueStart)
            guard valueEnd > valueStart else { return [] }
            members.append(Member(start: position, keyEnd: keyEnd, key: key, value: valueStart..<valueEnd))
            position = skipSpace(from: valueEnd)
            if position < text.count, text[position] == UInt8(ascii: ",") { position = skipSpace(from: position + 1) }
        }
        return members
    }

    private func arrayElements(at span: Range<Int>) -> [Range<Int>] {
        var elements: [Range<Int>] = []
        var position = skipSpace(from: span.lowerBound + 1)
        while position < span.upperBound - 1 {
            let end = endOfValue(at: position)
            guard end > position else { return [] }
            elements.append(position..<end)
            position = skipSpace(from: end)
            if position < text.count, text[position] == UInt8(ascii: ",") { position = skipSpace(from: position + 1) }
        }
        return elements
    }

    /// The spacing after the comma before the member at `start`, to put after a comma before a
    /// new member. A first member on its line has only the bracket before it (`["classic"]`):
    /// then the spacing after the text's commas on one line (`", "` in Python's output).
    private func separator(before start: Int) -> ArraySlice<UInt8> {
        var position = start
        while position > 0, Self.isSpace(text[position - 1]) { position -= 1 }
        let spacing = text[position..<start]
        guard position > 0, text[position - 1] != UInt8(ascii: ","), !spacing.contains(0x0A) else { return spacing }
        return inlineSpacing().comma
    }

    /// A comma to write after the item at `index`, with the spacing its neighbours have before
    /// theirs (`1 , 2`): the one after it, or after the item before it.
    private func comma(after index: Int, of items: [(start: Int, end: Int)]) -> [UInt8] {
        for item in [index, index - 1] where item >= 0 && item + 1 < items.count {
            var position = items[item].end
            while position < items[item + 1].start, text[position] == 0x20 || text[position] == 0x09 { position += 1 }
            if text[position] == UInt8(ascii: ",") { return Array(text[items[item].end..<position]) + [UInt8(ascii: ",")] }
        }
        return [UInt8(ascii: ",")]
    }

    /// The spacing after a comma and after a colon where the line goes on (the first of each in
    /// the text, outside strings). With no such comma, the colon's (Python writes `", "` with
    /// `": "`, `jq -c` neither); with neither, a space in a text over lines, nothing on one line.
    private func inlineSpacing() -> (comma: ArraySlice<UInt8>, colon: ArraySlice<UInt8>) {
        var comma: ArraySlice<UInt8>?
        var colon: ArraySlice<UInt8>?
        var position = 0
        var inString = false
        while position < text.count, comma == nil || colon == nil {
            let byte = text[position]
            if inString {
                if byte == UInt8(ascii: "\\") { position += 1 } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: ",") || byte == UInt8(ascii: ":") {
                var end = position + 1
                while end < text.count, text[end] == 0x20 || text[end] == 0x09 { end += 1 }
                if end < text.count, text[end] != 0x0A, text[end] != 0x0D {
                    if byte == UInt8(ascii: ","), comma == nil { comma = text[(position + 1)..<end] }
                    if byte == UInt8(ascii: ":"), colon == nil { colon = text[(position + 1)..<end] }
                }
            }
            position += 1
        }
        let fallback: ArraySlice<UInt8> = layout.pretty ? [0x20] : []
        return (comma ?? colon ?? fallback, colon ?? fallback)
    }

    /// The end of the value that starts at `start`, in a text that reads as JSON.
    private func endOfValue(at start: Int) -> Int {
        var position = start
        var depth = 0
        while position < text.count {
            let byte = text[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                while position < text.count, text[position] != UInt8(ascii: "\"") {
                    position += text[position] == UInt8(ascii: "\\") ? 2 : 1
                }
                position += 1
                if depth == 0 { return position }
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 { return position + 1 }
                if depth < 0 { return position }
            case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                if depth == 0 { return position }
            default:
                break
            }
            position += 1
        }
        return min(position, text.count)
    }

    private func skipSpace(from start: Int) -> Int {
        var position = start
        while position < text.count, Self.isSpace(text[position]) { position += 1 }
        return position
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
}

extension SaveValue {
    fileprivate var isNonEmptyContainer: Bool {
        switch self {
        case .dictionary(let entries): !entries.isEmpty
        case .array(let items): !items.isEmpty
        default: false
        }
    }
}
