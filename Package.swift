// swift-tools-version:6.0
import PackageDescription

/// Release builds optimise across module boundaries so that the engine's
/// generic operators are specialised where the hub and the benchmark use them,
/// and leave out the dynamic exclusivity checks on the engine's hot path
/// (debug builds, where every test runs, keep them).
let optimised: [SwiftSetting] = [
    .unsafeFlags(["-cross-module-optimization", "-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "ReactiveHub",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "HubCore", targets: ["HubCore"]),
        .library(name: "HubTransport", targets: ["HubTransport"]),
        .library(name: "HubServer", targets: ["HubServer"]),
        .library(name: "HubClient", targets: ["HubClient"]),
        .executable(name: "hubcli", targets: ["hubcli"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "5.0.0"),
    ],
    targets: [
        .target(
            name: "HubCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            swiftSettings: optimised
        ),
        .target(
            name: "HubServer",
            dependencies: [
                "HubCore",
                "HubTransport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: optimised
        ),
        .systemLibrary(
            name: "CWebsockets",
            path: "Sources/CWebsockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .target(
            name: "HubTransport",
            dependencies: [
                "CWebsockets",
                "HubCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: optimised
        ),
        .target(
            name: "HubClient",
            dependencies: [
                "HubCore",
                "HubTransport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimised
        ),
        .executableTarget(
            name: "hubcli",
            dependencies: [
                "HubClient",
                "HubCore",
                "HubServer",
                "HubTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimised
        ),
        .executableTarget(
            name: "hub-bench",
            dependencies: [
                "HubCore",
                .product(name: "OpenCombine", package: "OpenCombine"),
            ],
            swiftSettings: optimised
        ),
        .testTarget(
            name: "HubCoreTests",
            dependencies: [
                "HubCore",
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "HubTransportTests",
            dependencies: [
                "HubTransport",
                "HubCore",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .testTarget(
            name: "HubClientTests",
            dependencies: [
                "HubClient",
                "HubServer",
                "HubCore",
                "HubTransport",
                "hubcli",
            ]
        ),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "HubServer",
                "HubCore",
                "HubTransport",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "ScenarioTests",
            dependencies: [
                "HubServer",
                "HubClient",
                "HubCore",
                "HubTransport",
            ]
        ),
        .testTarget(
            name: "HubServerConfigTests",
            dependencies: [
                "HubServer",
                "HubCore",
                "HubTransport",
                "hubcli",
            ]
        ),
    ]
)
