python train.py --use_gpu 0 \
                --NeuMF 1 \
                --epochs 20 \
                --batch_size 256 \
                --num_factors 8 \
                --num_neg 4 \
                --lr 0.001 \
                --model_dir 'model_dir' 