import Foundation
import PackagePlugin

/// Compiles the built-in save kinds (`Formats/<kind>/*.json`) into the binary as Swift source,
/// so that an installed `savetool`, copied anywhere on its own, finds them: a resource bundle
/// would have to sit beside the binary, and a binary without it could not start.
@main
struct EmbedFormats: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let directory = target.directoryURL
        let files = (FileManager.default.subpaths(atPath: directory.path) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFormats.swift")
        return [
            .buildCommand(
                displayName: "Embedding the built-in save kinds",
                executable: try context.tool(named: "embed-formats").url,
                arguments: [output.path, directory.path] + files,
                inputFiles: files.map { directory.appending(path: $0) },
                outputFiles: [output])
        ]
    }
}
