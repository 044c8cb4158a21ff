import OrderedCollections

/// A changed document written over its JSON text so that only the bytes of what changed
/// change: a one-field edit of a file written by Python, by `JSONEncoder` or by hand is then a
/// one-line diff, whatever its spacing (`"key" : value`), inline arrays, escapes (`\u00eb`) or
/// number spellings (`2.50`).
///
/// It walks the old and new values together over the old text. A value that differs is written
/// where it stood, over lines (indented as its line is) where its neighbours stand on lines of
/// their own, else on one line, and spelled as the text spells (its colons' spacing, `\u`
/// escapes where it has them); a key or element removed takes one separator with it; a new key
/// takes the place of a key that went between the same two keys that stay (a renamed key), or
/// follows the key before it, an element the last element, each spaced as its neighbours.
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
    /// wrapped in `{"$dict": …}`). New keys may come anywhere among the ones that stay. Between
    /// two keys that stay, a new key takes the place of a key that went (a key that a migration
    /// renames keeps its line, its spacing and, where the value is the same, its value's text);
    /// more new keys follow the last of them, fewer leave the rest to be removed.
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
        for (index, member) in members.enumerated() {
            if let value = after[member.key] { _ = try change(before.values[index], to: value, at: member.value, inLines: inLines) }
        }
        // The gaps between keys that stay (the first before the first of them): what went from
        // each, in text order, and what comes into it, in the new order.
        var gone: [Int?: [Int]] = [:]
        var previous: Int?
        for (index, member) in members.enumerated() {
            if after[member.key] != nil { previous = index } else { gone[previous, default: []].append(index) }
        }
        var coming: [Int?: [String]] = [:]
        previous = nil
        for key in after.keys {
            if let index = before.index(forKey: key) { previous = index } else { coming[previous, default: []].append(key) }
        }
        var removed: [Int] = []
        var unpaired: [(gap: Int?, keys: ArraySlice<String>)] = []
        // In text order, so that the same edit always gives the same bytes.
        for gap in Set(gone.keys).union(coming.keys).sorted(by: { ($0 ?? -1) < ($1 ?? -1) }) {
            let went = gone[gap] ?? [], new = coming[gap] ?? []
            for (index, key) in zip(went, new) {
                // In the place of the key that went: its key, then its value changed as any other.
                let member = members[index]
                edits.append((member.start..<member.keyEnd, try encode(.string(key), multiline: false, indentedAs: nil)))
                _ = try change(before.values[index], to: after[key]!, at: member.value, inLines: inLines)
            }
            removed += went.dropFirst(new.count)
            if new.count > went.count { unpaired.append((gap, new.dropFirst(went.count))) }
        }
        // A renamed key's value keeps its text: a removed member's, where the value is the same.
        var renamedFrom = removed.map { (value: before.values[$0], text: members[$0].value) }
        func oldText(of value: SaveValue) -> Range<Int>? {
            guard let index = renamedFrom.firstIndex(where: { $0.value == value }) else { return nil }
            return renamedFrom.remove(at: index).text
        }
        for (gap, keys) in unpaired {
            // After the last key of the gap that stands in the text (one in whose place a new key
            // now stands, else the key that stays before the gap); before the first key that stays
            // when the gap is the first and empty.
            if let anchor = (gone[gap] ?? []).last ?? gap {
                let member = members[anchor]
                var bytes: [UInt8] = []
                for key in keys {
                    bytes.append(contentsOf: comma(after: anchor, of: items))
                    bytes.append(contentsOf: separator(before: member.start))
                    bytes.append(contentsOf: try self.member(key, after[key]!, spacedAs: member, inLines: inLines, reusing: oldText(of: after[key]!)))
                }
                edits.append((member.value.upperBound..<member.value.upperBound, bytes))
            } else if let firstIndex = before.index(forKey: kept[0]) {
                let first = members[firstIndex]
                var bytes: [UInt8] = []
                for key in keys {
                    bytes.append(contentsOf: try member(key, after[key]!, spacedAs: first, inLines: inLines, reusing: oldText(of: after[key]!)))
                    bytes.append(contentsOf: comma(after: firstIndex, of: items))
                    bytes.append(contentsOf: separator(before: first.start))
                }
                edits.append((first.start..<first.start, bytes))
            }
        }
        removeRuns(removed.sorted(), of: items, in: span)
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
    /// separator on one side, so that what stays is spaced as before: a run that starts a line
    /// goes with the spacing after it (its lines go), one that shares a line with the member
    /// before goes with the comma before it (the line keeps its end). Callers keep at least one.
    private mutating func removeRuns(_ removed: [Int], of items: [(start: Int, end: Int)], in span: Range<Int>) {
        var index = 0
        while index < removed.count {
            var end = index
            while end + 1 < removed.count, removed[end + 1] == removed[end] + 1 { end += 1 }
            let (first, last) = (removed[index], removed[end])
            let startsALine = separator(before: items[first].start).contains(0x0A)
            if first > 0, last + 1 == items.count || !startsALine {
                // From the end of the member before, so its comma goes.
                edits.append((items[first - 1].end..<items[last].end, []))
            } else if last + 1 < items.count {
                // Up to the next member's start: its own separator and spacing go.
                edits.append((items[first].start..<items[last + 1].start, []))
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

    /// `value` as the codec writes it, then spelled as the text is: a colon spaced as its colons
    /// (`"key" : value`), non-ASCII text escaped where the text has none (Python's
    /// `ensure_ascii`); over lines, its later lines indented as the line holding `position`; on
    /// one line, spaced after its commas as the text's one-line containers are.
    private mutating func encode(_ value: SaveValue, multiline: Bool, indentedAs position: Int?) throws -> [UInt8] {
        var options = layout
        options.pretty = multiline
        options.byteOrderMark = false
        options.finalNewline = false
        let bytes = try codec.encode(value, options: options, report: &report)
        let style = textStyle()
        let escapes = style.asciiOnly && bytes.contains { $0 >= 0x80 }
        let lead = multiline && bytes.contains(0x0A) ? position.map(lineLead(at:)) ?? [] : []
        // The writer's own spacing: `": "` over lines, `":"` and `","` on one line.
        let writerColon: [UInt8] = multiline ? [0x20] : []
        let respaced = value.isNonEmptyContainer && (!multiline && !style.comma.isEmpty || style.colonBefore.count > 0 || !style.colonAfter.elementsEqual(writerColon))
        guard escapes || respaced || !lead.isEmpty else { return bytes }
        var spelled: [UInt8] = []
        spelled.reserveCapacity(bytes.count + bytes.count / 4)
        var index = 0
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if inString {
                if byte == UInt8(ascii: "\\") {
                    spelled.append(byte)
                    spelled.append(bytes[index])
                    index += 1
                    continue
                }
                if byte == UInt8(ascii: "\"") { inString = false }
                if escapes, byte >= 0x80 {
                    // A whole UTF-8 sequence, as `\uxxxx` (two, a surrogate pair, past the BMP), in
                    // lower case as Python writes it.
                    let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                    for unit in String(decoding: bytes[(index - 1)..<min(index - 1 + length, bytes.count)], as: UTF8.self).utf16 {
                        spelled.append(contentsOf: ("\\u" + hex(unit, digits: 4).lowercased()).utf8)
                    }
                    index += length - 1
                    continue
                }
                spelled.append(byte)
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                spelled.append(byte)
            } else if byte == UInt8(ascii: ":"), respaced {
                spelled.append(contentsOf: style.colonBefore)
                spelled.append(byte)
                spelled.append(contentsOf: style.colonAfter)
                if multiline, index < bytes.count, bytes[index] == 0x20 { index += 1 }
            } else if byte == UInt8(ascii: ","), respaced, !multiline {
                spelled.append(byte)
                spelled.append(contentsOf: style.comma)
            } else {
                spelled.append(byte)
                if byte == 0x0A { spelled.append(contentsOf: lead) }
            }
        }
        return spelled
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
    private mutating func separator(before start: Int) -> ArraySlice<UInt8> {
        var position = start
        while position > 0, JSONScan.isSpace(text[position - 1]) { position -= 1 }
        let spacing = text[position..<start]
        guard position > 0, text[position - 1] != UInt8(ascii: ","), !spacing.contains(0x0A) else { return spacing }
        return textStyle().comma
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

    /// How the text spells what a writer may spell otherwise.
    private struct TextStyle {
        /// After a comma where the line goes on.
        var comma: ArraySlice<UInt8>
        /// Before and after a colon (`"key" : value` has a space on each side).
        var colonBefore: ArraySlice<UInt8>
        var colonAfter: ArraySlice<UInt8>
        /// No byte past ASCII, and some `\u` escape of a letter past it: non-ASCII text is
        /// written as such escapes (Python's `ensure_ascii`). A text with none tells nothing.
        var asciiOnly: Bool
    }

    private var style: TextStyle?

    /// The first comma and colon of the text outside strings whose line goes on after them give
    /// their spacing. With no such comma, the colon's spacing (Python writes `", "` with `": "`,
    /// `jq -c` neither); with neither, a space in a text over lines, nothing on one line.
    private mutating func textStyle() -> TextStyle {
        if let style { return style }
        var comma: ArraySlice<UInt8>?
        var colon: (before: ArraySlice<UInt8>, after: ArraySlice<UInt8>)?
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
                    if byte == UInt8(ascii: ":"), colon == nil {
                        var start = position
                        while start > 0, text[start - 1] == 0x20 || text[start - 1] == 0x09 { start -= 1 }
                        colon = (text[start..<position], text[(position + 1)..<end])
                    }
                }
            }
            position += 1
        }
        let fallback: ArraySlice<UInt8> = layout.pretty ? [0x20] : []
        let found = TextStyle(
            comma: comma ?? colon?.after ?? fallback, colonBefore: colon?.before ?? [], colonAfter: colon?.after ?? fallback,
            asciiOnly: !text.contains { $0 >= 0x80 } && escapesPastASCII())
        style = found
        return found
    }

    /// Whether some `\uXXXX` escape of the text stands for a character past ASCII.
    private func escapesPastASCII() -> Bool {
        var position = 0
        while position + 5 < text.count {
            if text[position] == UInt8(ascii: "\\") {
                if text[position + 1] == UInt8(ascii: "u"), !(text[position + 2] == UInt8(ascii: "0") && text[position + 3] == UInt8(ascii: "0") && text[position + 4] < UInt8(ascii: "8")) {
                    return true
                }
                position += 2
            } else {
                position += 1
            }
        }
        return false
    }

    /// The end of the value that starts at `start`, in a text that reads as JSON.
    private func endOfValue(at start: Int) -> Int { JSONScan.endOfValue(text, at: start) }

    private func skipSpace(from start: Int) -> Int { JSONScan.skipSpace(text, from: start) }
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
