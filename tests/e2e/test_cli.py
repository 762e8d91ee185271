# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""One source for the command line: every command's -h, its man page
(rendered by man from what scdoc made of it), the bash completion (run
in bash) and the zsh completion list the same options, and the parser
takes each of them; the completions offer the values the parsers
accept. Then the Debian package: make deb, lintian, dpkg -i, what it
installed working, dpkg --purge leaving nothing behind."""
import os
import re
import subprocess

from jt import BUILD, JT, ROOT, TMP, run

COMMANDS = ["record", "maps", "audit", "report", "script", "export", "html", "agent",
            "doctor"]
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9:_.]*$")


def make(*targets):
    run(["make", "-C", ROOT, f"OUT={BUILD}", *targets], timeout=900)


def option_lines(text, indents, args=None):
    """The options of lines indented by one of indents whose first word is
    an option: -x, --name, then placeholders, then the help. args gets
    those followed by a placeholder."""
    opts = set()
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if indent not in indents or not line.lstrip().startswith("-"):
            continue
        names = []
        for tok in line.split():
            tok = tok.rstrip(",")
            if tok.startswith("-"):
                names.append(tok)
            elif PLACEHOLDER.match(tok):
                if args is not None:
                    args.update(names)
            else:
                break
        opts.update(names)
    return opts


def help_options(cmd, args=None):
    p = run([JT, cmd, "-h"])
    return option_lines(p.stdout, (2, 6), args) | {"-h", "--help"}


def man_options(cmd):
    page = os.path.join(BUILD, "man", f"jittrace-{cmd}.1")
    text = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="100",
                                             MAN_KEEP_FORMATTING="0")).stdout
    text = re.sub(r".\x08", "", text)  # no overstrike bold
    section = text.split("\nOPTIONS\n", 1)[1].split("\nEXAMPLES\n")[0] \
        .split("\nSEE ALSO\n")[0]
    return option_lines(section, (7,))


def bash_complete(words):
    script = (f"source {BUILD}/completion/jittrace\n"
              "COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
              "_jittrace; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = run(["bash", "-c", script, "bash", *words])
    return [w for w in p.stdout.splitlines() if w]


def zsh_sections():
    text = open(os.path.join(BUILD, "completion", "_jittrace")).read()
    return dict(re.findall(r"^\t(\w+)\)\n(.*?)\n\t\t;;$", text, re.M | re.S))


def test_usage_man_and_completion_agree():
    make("man", "completion")
    if subprocess.run(["zsh", "-n", os.path.join(BUILD, "completion", "_jittrace")]).returncode:
        raise AssertionError("zsh cannot parse _jittrace")
    zsh = zsh_sections()
    total = 0
    for cmd in COMMANDS:
        args = set()
        want = help_options(cmd, args)
        assert len(want) >= 4, (cmd, want)
        assert man_options(cmd) == want, (cmd, man_options(cmd) ^ want)
        assert set(bash_complete(["jittrace", cmd, "-"])) == want, cmd
        zopts = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?=[=+,}\[])", zsh[cmd]))
        assert zopts == want, (cmd, zopts ^ want)
        # The parser takes each: only the bogus option after it is
        # refused, or the made-up value it was given.
        for opt in want - {"-h", "--help"}:
            p = run([JT, cmd, opt, *(["1"] if opt in args else []), "--bogus-zz"],
                    check=False, timeout=10)
            assert p.returncode == 2, (cmd, opt, p.stderr)
            assert "unrecognized option '--bogus-zz'" in p.stderr or \
                ("unrecognized" not in p.stderr and "invalid option" not in p.stderr), \
                (cmd, opt, p.stderr)
        total += len(want)
    print(f"    {len(COMMANDS)} commands, {total} options: -h, man, bash and zsh agree")


def test_completion_offers_what_the_parsers_take():
    make("completion")
    assert bash_complete(["jittrace", "re"]) == ["record", "report"]
    tiers = bash_complete(["jittrace", "record", "--tier", ""])
    assert tiers == ["auto", "kernel", "fentry", "kprobe", "tracepoint"], tiers
    keys = bash_complete(["jittrace", "report", "--sort", "comm,d"])
    assert keys == ["comm,dso", "comm,dsym"], keys
    assert bash_complete(["jittrace", "audit", "--kind", "co"]) == ["coalesced", "cow"]
    assert bash_complete(["jittrace", "export", "--format", "=", ""]) == ["pprof", "perf"]
    assert "ls" in bash_complete(["jittrace", "record", "--", "l"])
    # The words offered are the words taken: each one parses.
    data = os.path.join(TMP, "cli.data")
    run([JT, "record", "-o", data, "--user", "nobody", "--", "true"])
    for k in ["comm", "pid", "dso", "sym"]:
        run([JT, "report", "-i", data, "--sort", k])
    for k in bash_complete(["jittrace", "audit", "--kind", ""]):
        run([JT, "audit", "-i", data, "--kind", k])
    for t in tiers:
        p = run([JT, "record", "--tier", t, "--bogus-zz"], check=False)
        assert "--tier wants" not in p.stderr, (t, p.stderr)


def installed_files():
    p = run(["dpkg", "-L", "jittrace"], check=False)
    return [f for f in p.stdout.splitlines() if os.path.isfile(f)]


def test_debian_package_installs_works_and_purges():
    if os.path.exists("/usr/bin/jittrace") and run(
            ["dpkg", "-S", "/usr/bin/jittrace"], check=False).returncode:
        raise AssertionError("/usr/bin/jittrace is not the package's: not overwriting it")
    run(["dpkg", "--purge", "jittrace"], check=False)  # a run killed midway
    # An install elsewhere first: the package must not take its unit or
    # anything else from this build, only from its own.
    run(["make", "-s", "-C", ROOT, f"OUT={BUILD}", "install",
         f"DESTDIR={os.path.join(TMP, 'elsewhere')}", "PREFIX=/opt/else"])
    make("deb")  # lintian --fail-on error is part of it
    deb_dir = os.path.join(BUILD, "deb")
    assert os.access(os.path.join(deb_dir, "src/build/jittrace"), os.X_OK), \
        "the package was not built in its own tree"
    debs = [f for f in os.listdir(deb_dir) if re.match(r"jittrace_.*\.deb$", f)]
    assert len(debs) == 1, debs
    deb = os.path.join(deb_dir, debs[0])
    tags = run(["lintian", "--tag-display-limit", "0", deb], check=False).stdout
    errors = [t for t in tags.splitlines() if t.startswith("E:")]
    warnings = [t for t in tags.splitlines() if t.startswith("W:")]
    assert not errors, errors
    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    # The agent opens libcurl and libmicrohttpd itself: the package still
    # depends on the packages that hold them.
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    for soname in ("libcurl.so.4", "libmicrohttpd.so.12"):
        path = re.search(rf"{re.escape(soname)} \(libc6,x86-64\) => (\S+)",
                         run(["ldconfig", "-p"]).stdout).group(1)
        pkg = run(["dpkg", "-S", os.path.realpath(path)]).stdout.split(":")[0]
        assert re.search(rf"(^|, ){re.escape(pkg)} \(>= [^)]+\)", depends), (pkg, depends)
    try:
        run(["dpkg", "-i", deb], timeout=300)
        files = installed_files()
        p = run(["jittrace", "--version"])
        assert p.stdout == f"jittrace version {version}\n", p.stdout
        assert run(["man", "-w", "jittrace-record"]).stdout.strip() == \
            "/usr/share/man/man1/jittrace-record.1.gz"
        assert "--call-graph" in run(["man", "jittrace-record"],
                                     env=dict(os.environ, MANWIDTH="80")).stdout
        p = run(["jittrace", "doctor"], check=False)
        assert p.returncode == 0 and "probes" in p.stdout, p.stdout + p.stderr
        # The JVMTI agent where the installed binary looks for it.
        assert "/usr/lib/jittrace/libjittrace-jvmti.so" in files
        comp = "/usr/share/bash-completion/completions/jittrace"
        p = run(["bash", "-c", f"source {comp}; COMP_WORDS=(jittrace doc); "
                 "COMP_CWORD=1; _jittrace; echo ${COMPREPLY[*]}"])
        assert p.stdout == "doctor\n", p.stdout
        assert "/usr/share/zsh/vendor-completions/_jittrace" in files
        unit = "/lib/systemd/system/jittrace-agent.service"
        assert unit in files
        assert "ExecStart=/usr/bin/jittrace agent" in open(unit).read()
        wants = "/etc/systemd/system/multi-user.target.wants/jittrace-agent.service"
        assert not os.path.lexists(wants), "the unit was enabled"
        for doc in ("README.md.gz", "usage.md.gz", "copyright"):
            assert f"/usr/share/doc/jittrace/{doc}" in files, doc
    finally:
        run(["dpkg", "--purge", "jittrace"], timeout=300)
    left = [f for f in files if os.path.lexists(f)]
    assert not left, left
    assert run(["dpkg-query", "-W", "-f", "${Status}", "jittrace"],
               check=False).stdout in ("", "unknown ok not-installed")
    print(f"    {debs[0]}: lintian 0 errors, {len(warnings)} warnings; "
          f"{len(files)} files installed, all working, none left after purge")
