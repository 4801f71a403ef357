// JvmCalls is the target of jvmcalls.bt (trace_tools_test.go), compiled
// with javac at test time and run with -XX:+ExtendedDTraceProbes. It prints
// "ready" and answers each line on stdin with "done"; for a line "go" it
// first calls work 5000 times and other 500 times. It exits at the end of
// stdin.
import java.io.BufferedReader;
import java.io.InputStreamReader;

public class JvmCalls {
    static int work(int n) { return n * 2 + 1; }

    static int other(int n) { return n - 1; }

    public static void main(String[] a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        long sink = 0;
        while ((line = in.readLine()) != null) {
            for (int i = 0; line.equals("go") && i < 5000; i++) {
                sink += work(i);
                if (i % 10 == 0)
                    sink += other(i);
            }
            System.out.println(sink == 1 ? "never" : "done");
            System.out.flush();
        }
    }
}
