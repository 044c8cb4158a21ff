// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "savetool",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "SaveKit", targets: ["SaveKit"]),
        .library(name: "SaveArchive", targets: ["SaveArchive"]),
        .executable(name: "savetool", targets: ["savetool"]),
        .executable(name: "savetool-serve", targets: ["savetool-serve"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.0.0"),
        // `swift package generate-documentation` for the DocC catalog of SaveKit.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
        // Property tests of the merge engine (generated documents, shrinking).
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        // The sync server (`savetool serve`): HTTP/1.1 on swift-nio. No traits: the
        // swift-configuration reader and the extra Foundation support are not used.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        // The sync server's /metrics, in Prometheus's text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The core: value model, codecs, editing. No archive or CLI dependency.
        .target(
            name: "SaveKit",
            dependencies: [
                "CSaveToolSystem",
                .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // libarchive, from the system (Debian: libarchive-dev).
        .systemLibrary(
            name: "CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]
        ),
        // libzstd, from the system (Debian: libzstd-dev): zstd bundles are compressed by it
        // directly, with a worker thread, which libarchive's filter does not offer.
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]
        ),
        // System calls the Swift overlays lack (an atomic swap of two directories). Not named CSystem:
        // swift-system, which swift-nio and Hummingbird bring, has a C target of that name.
        .target(name: "CSaveToolSystem"),
        // Archives and save bundles over libarchive, kept out of the SaveKit core.
        .target(
            name: "SaveArchive",
            dependencies: [
                "SaveKit", "SaveStorage", "CArchive", "CZstd", "CSaveToolSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        // Where backup repositories keep their objects: the storage protocol and a local folder.
        .target(name: "SaveStorage", dependencies: ["SaveKit"]),
        // S3-compatible object storage behind the same protocol: SigV4 and the AWS environment.
        .target(name: "SaveStorageS3", dependencies: ["SaveStorage", "SaveKit", "SaveHTTP", .product(name: "Crypto", package: "swift-crypto")]),
        // A small synchronous HTTP client over libcurl, for the S3 client and the sync client.
        .target(name: "SaveHTTP", dependencies: ["CSaveHTTP", "SaveKit"]),
        // libcurl, opened only when a request is made (see its header).
        .target(name: "CSaveHTTP", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // Sync: slot names, the wire's records, and the client of `savetool sync`.
        .target(
            name: "SaveSync",
            dependencies: ["SaveKit", "SaveHTTP", .product(name: "OrderedCollections", package: "swift-collections")]),
        // The sync server of `savetool serve`: routes, pushes and merges, the slot store, tokens,
        // metrics, daily bundles of the heads.
        .target(
            name: "SaveServer",
            dependencies: [
                "SaveKit", "SaveStorage", "SaveSync", "SaveArchive",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                // `--tls-cert`: TLS in the server itself, through swift-nio-ssl.
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The command-line tool: argument parsing and output only; the work is in SaveKit.
        .executableTarget(
            name: "savetool",
            dependencies: [
                "SaveKit", "SaveArchive", "SaveStorage", "SaveStorageS3", "SaveSync", "SaveToolCLI", "BuiltInFormats", "CSaveToolSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]
        ),
        // What savetool and savetool-serve share: the global options, errors → exit codes, output.
        .target(
            name: "SaveToolCLI",
            dependencies: ["SaveKit", "SaveArchive", "BuiltInFormats", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // `savetool serve`, a binary of its own (savetool hands it the arguments): the server's
        // framework stays out of the start-up of every other command.
        .executableTarget(
            name: "savetool-serve",
            dependencies: [
                "SaveKit", "SaveServer", "SaveStorage", "SaveStorageS3", "SaveToolCLI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The save kinds that ship inside savetool: Formats/<kind>/ folders, compiled into the
        // binary by the EmbedFormats plugin (a resource bundle would have to sit beside it).
        .target(
            name: "BuiltInFormats", path: "Formats",
            exclude: ["blocks.defaults", "blocks.gamesave", "kape.tournament", "kingdom.player", "kingdom.state", "sudoku.game"],
            plugins: ["EmbedFormats"]),
        .executableTarget(name: "embed-formats", path: "Plugins/EmbedFormatsTool"),
        .plugin(name: "EmbedFormats", capability: .buildTool(), dependencies: ["embed-formats"]),
        // libFuzzer targets, one per decoder (scripts/fuzz); built plainly they replay files.
        .target(name: "FuzzSupport", dependencies: ["SaveKit"], path: "Fuzz/Support"),
        .executableTarget(name: "fuzz-json", dependencies: ["FuzzSupport", "SaveKit"], path: "Fuzz/JSON"),
        .executableTarget(name: "fuzz-xml-plist", dependencies: ["FuzzSupport", "SaveKit"], path: "Fuzz/XMLPlist"),
        .executableTarget(name: "fuzz-binary-plist", dependencies: ["FuzzSupport", "SaveKit"], path: "Fuzz/BinaryPlist"),
        .executableTarget(name: "fuzz-keyed-archive", dependencies: ["FuzzSupport", "SaveKit"], path: "Fuzz/KeyedArchive"),
        // Helpers shared by the test targets: the conformance corpus, running processes.
        .target(name: "TestSupport", dependencies: ["SaveKit"], path: "Tests/TestSupport"),
        .testTarget(
            name: "SaveKitTests",
            dependencies: [
                "SaveKit", "TestSupport", "FuzzSupport", .product(name: "OrderedCollections", package: "swift-collections"),
                .product(name: "PropertyBased", package: "swift-property-based"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.copy("Oracles"), .copy("Regressions")]
        ),
        .testTarget(
            name: "SaveArchiveTests",
            dependencies: ["SaveArchive", "SaveKit", "SaveStorage", "TestSupport", "CSaveToolSystem"],
            resources: [.copy("Fixtures")]
        ),
        // The storage seam, against a local folder and a real S3-compatible server (moto).
        .testTarget(name: "SaveStorageTests", dependencies: ["SaveStorage", "SaveStorageS3", "SaveKit", "TestSupport"]),
        // Runs the built savetool binary: exit codes, messages, files on disk; and `savetool serve`,
        // started for real, through a real HTTP client.
        .testTarget(
            name: "savetoolTests",
            dependencies: ["savetool", "savetool-serve", "SaveKit", "SaveArchive", "SaveHTTP", "SaveServer", "SaveStorage", "SaveSync", "SaveToolCLI", "TestSupport"], exclude: ["Fixtures"]),
    ]
)
