import SaveToolCLI
import Testing

/// ArgumentParser keeps the last of a repeated option; a command that must not lose one (a
/// merge's copies) finds repeats on its command line, by any spelling and in either form.
@Suite("Repeated options")
struct RepeatedOptionTests {
    let options = [["--local"], ["--remote"], ["-o", "--output"]]

    @Test func repeatsAreFoundByAnySpellingAndForm() {
        #expect(CommandLineText.repeatedOption(of: options, in: ["merge", "--local", "a", "--remote", "b", "-o", "c"]) == nil)
        #expect(CommandLineText.repeatedOption(of: options, in: ["--remote", "b", "--remote=c"]) == "--remote")
        #expect(CommandLineText.repeatedOption(of: options, in: ["-o", "x", "--output", "y"]) == "-o")
        #expect(CommandLineText.repeatedOption(of: options, in: ["--output=x", "-o=y"]) == "-o")
        // A value that looks like another option's name is not that option: only names count.
        #expect(CommandLineText.repeatedOption(of: options, in: ["--local", "--localized", "--local-copy"]) == nil)
        // After `--`, everything is a value.
        #expect(CommandLineText.repeatedOption(of: options, in: ["--local", "a", "--", "--local"]) == nil)
    }
}
