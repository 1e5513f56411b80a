"""Tests of the suite itself: every property kills a mutant of the zoo, the code's structure, the generated and cited documents, the mutation report."""
