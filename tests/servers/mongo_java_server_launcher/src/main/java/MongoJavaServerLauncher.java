import java.util.List;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * mongo-java-server (in-memory backend) on 127.0.0.1 for the real-server test tier.
 *
 * <pre>java -jar mongo-java-server-launcher.jar [port]   # 0 or nothing: a free port</pre>
 *
 * Prints one line, the server's URI, once it listens; SIGTERM closes the clients and stops it.
 *
 * The library's own newest version, ServerVersion.MONGO_5_0, reports maxWireVersion 8, which
 * pymongo 4.20 refuses ("reports wire version 8, but this version of PyMongo requires at least 9").
 * So the server reports MongoDB 5.0.0 with the wire version MongoDB 5.0 really has, 13.
 */
public final class MongoJavaServerLauncher {

    /** MongoDB 5.0.0, wire version 13: what buildInfo, serverStatus and isMaster report. */
    static final MongoVersion MONGO_5_0_WIRE_13 = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(5, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return 13;
        }
    };

    public static void main(String[] args) {
        // Before any logger exists: warnings and errors only, on stderr (the Python launcher keeps them in a log).
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        MongoServer server = new MongoServer(new MemoryBackend().version(MONGO_5_0_WIRE_13));
        server.bind("127.0.0.1", port);
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "shutdown"));
        System.out.println("mongodb://127.0.0.1:" + server.getLocalAddress().getPort() + "/");
        System.out.flush();
        // Netty's event loop threads keep the JVM running until SIGTERM runs the shutdown hook.
    }
}
