import Testing

/// A mistyped command is named as one, with the nearest command, where its words were
/// "unexpected arguments".
@Suite("Unknown commands")
struct UnknownCommandTests {
    @Test func aMistypedCommandIsNamedWithTheNearest() throws {
        let typo = try CLI.run("conver", "save.plist")
        #expect(typo.status == 64)
        #expect(typo.errors == "savetool: unknown command 'conver', did you mean 'convert'? (see savetool --help)\n", "\(typo.errors)")
        let sub = try CLI.run("backup", "creat", "saves")
        #expect(sub.status == 64 && sub.errors == "savetool: unknown command 'creat', did you mean 'create'? (see savetool backup --help)\n", "\(sub.errors)")
        let far = try CLI.run("frobnicate")
        #expect(far.status == 64 && far.errors.hasPrefix("savetool: unknown command 'frobnicate', expected one of: convert, inspect, get,"), "\(far.errors)")
        // An extra argument to a command that exists is still said as ArgumentParser says it.
        let extra = try CLI.run("convert", "a.json", "b.json")
        #expect(extra.status == 64 && extra.errors.contains("Unexpected argument 'b.json'"), "\(extra.errors)")
    }
}
