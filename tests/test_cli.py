from pykraft.cli.main import build_parser


def test_parser_lists_subcommands() -> None:
    text = build_parser().format_help()
    for name in ("storage", "sim"):
        assert name in text
