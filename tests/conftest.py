"""Pytest options: ``--update-golden`` rewrites the expected files under golden/."""


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/**/*.lowered.onnxtxt from the current rules (review the diff!)",
    )
