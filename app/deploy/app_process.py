"""One app process: `streamlit run`, its server first told to hand every page the address of
its backend, to keep its compiled pages and to send each message at once
(attention_lab.frame.streamlit_private: announce_backend, keep_compiled_pages,
send_without_delay). The `attention-lab` command and serve's app processes
run this, `python -m attention_lab.deploy.app_process run <app>/Home.py [flags]`, with
Streamlit's own arguments."""

from __future__ import annotations

from attention_lab.frame.streamlit_private import (
    announce_backend,
    keep_compiled_pages,
    run_command_line,
    send_without_delay,
)


def main() -> None:
    """Streamlit's command line (sys.argv), as `python -m streamlit` runs it."""
    announce_backend()
    keep_compiled_pages()
    send_without_delay()
    run_command_line()


if __name__ == "__main__":
    main()
