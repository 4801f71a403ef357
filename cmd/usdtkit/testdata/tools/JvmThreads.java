// JvmThreads is the target of jvmthreads.bt (trace_tools_test.go),
// compiled with javac at test time. It prints "ready" and answers each
// line on stdin with "done"; for a line "go" it first starts the threads
// worker-0 to worker-3, each joined before the next starts. It exits at
// the end of stdin.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class JvmThreads {
    public static void main(String[] a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            for (int i = 0; line.equals("go") && i < 4; i++) {
                Thread t = new Thread(() -> {}, "worker-" + i);
                t.start();
                t.join();
            }
            System.out.println("done");
            System.out.flush();
        }
    }
}
