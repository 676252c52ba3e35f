import ArgumentParser
import HubClient

/// The shape of the one-call client commands: connect, call, close, report.
enum ClientCommand {
    /// Connects with `options`, runs `body`, closes; a failure is reported on
    /// standard error and becomes the process's exit status.
    static func run(
        _ options: ClientOptions, _ body: (HubClient) async throws(HubClientError) -> Void
    ) async throws {
        let client: HubClient
        do throws(HubClientError) {
            client = try await options.connect()
        } catch {
            throw ClientExit.report(error)
        }
        do throws(HubClientError) {
            try await body(client)
        } catch {
            await client.close()
            throw ClientExit.report(error)
        }
        await client.close()
    }
}
