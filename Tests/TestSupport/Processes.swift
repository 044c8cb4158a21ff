import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program and collects what it printed.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var output: [UInt8]
    public var errors: String
    public var outputText: String { String(decoding: output, as: UTF8.self) }
}

public enum Processes {
    private final class Box: @unchecked Sendable { var data = Data() }

    /// Runs `arguments[0]` (looked up on PATH when it has no slash) with the rest as arguments.
    public static func run(_ arguments: [String], input: [UInt8] = [], directory: URL? = nil, environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        if arguments[0].contains("/") {
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = arguments
        }
        if let directory { process.currentDirectoryURL = directory }
        if let environment { process.environment = environment }
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let output = Box(), errors = Box()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { output.data = stdout.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errors.data = stderr.fileHandleForReading.readDataToEndOfFile() }
        try? stdin.fileHandleForWriting.write(contentsOf: Data(input))
        try? stdin.fileHandleForWriting.close()
        process.waitUntilExit()
        group.wait()
        return ProcessResult(status: process.terminationStatus, output: Array(output.data), errors: String(decoding: errors.data, as: UTF8.self))
    }

    /// Runs `arguments` (output discarded) and sends it SIGKILL once `delay` seconds have
    /// passed, if it is still running; returns whether the kill ended it.
    public static func runKilled(after delay: TimeInterval, _ arguments: [String]) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(delay)
        while process.isRunning && Date() < deadline { usleep(1_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal
    }

    /// A fresh empty directory, removed by the caller with `FileManager.removeItem`.
    public static func temporaryDirectory(_ label: String = "savetool-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
