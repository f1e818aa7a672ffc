#pragma once
// Runs the real nest-cli (NEST_CLI_PATH, defined for every test_cli_* suite) and keeps its
// exit code and output; shared by the CLI contract tests.
#include <QByteArray>
#include <QProcess>
#include <QStringList>

namespace clitest {

struct Run {
    int exitCode = -1;   // -2: crashed; -1: did not finish in time
    QByteArray out, err;
};

inline Run runCli(const QStringList &args, int timeoutMs = 120000)
{
    QProcess p;
    p.start(QStringLiteral(NEST_CLI_PATH), args);
    Run r;
    if (!p.waitForFinished(timeoutMs))
        return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

} // namespace clitest
