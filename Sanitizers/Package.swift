// swift-tools-version:6.0
import PackageDescription

// The transport's and the server's integration tests, built with a sanitizer
// (`scripts/sanitize thread|address`): a package of its own, so that a sanitizer build
// compiles only what those tests link, not every test target and tool of the broker.
// Its targets are the root package's own test folders (symlinked under Tests/).
let package = Package(
    name: "HubSanitizers",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ReactiveHub", path: ".."),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
    ],
    targets: [
        .target(
            name: "NetworkTestSupport",
            dependencies: [.product(name: "DequeModule", package: "swift-collections")],
            path: "Tests/NetworkTestSupport"),
        .testTarget(
            name: "HubTransportTests",
            dependencies: [
                "NetworkTestSupport",
                .product(name: "HubTransport", package: "ReactiveHub"),
                .product(name: "HubLoop", package: "ReactiveHub"),
                .product(name: "HubEngine", package: "ReactiveHub"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            path: "Tests/HubTransportTests"),
        .testTarget(
            name: "HubServerTests",
            dependencies: [
                "NetworkTestSupport",
                .product(name: "HubServer", package: "ReactiveHub"),
                .product(name: "HubRegistry", package: "ReactiveHub"),
                .product(name: "HubSQLite", package: "ReactiveHub"),
                .product(name: "HubPipeline", package: "ReactiveHub"),
                .product(name: "HubEngine", package: "ReactiveHub"),
                .product(name: "HubValue", package: "ReactiveHub"),
                .product(name: "HubWire", package: "ReactiveHub"),
                .product(name: "HubTesting", package: "ReactiveHub"),
                .product(name: "HubTransport", package: "ReactiveHub"),
                .product(name: "HubLoop", package: "ReactiveHub"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HubServerTests"),
    ]
)
